import Foundation

/// Runs a target over stored inputs, without the fuzzer: the test suite's regression check.
enum FuzzReplay {
    /// Each path is a file, or a folder whose files are all run; prints how many ran.
    static func run(_ target: FuzzTarget, paths: [String]) -> Int32 {
        var count = 0
        for path in paths {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else {
                FileHandle.standardError.write(Data("touchline-fuzz: no such file or folder: \(path)\n".utf8))
                return 66
            }
            let files = isFolder.boolValue
                ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().map { path + "/" + $0 }
                : [path]
            for file in files {
                guard let data = FileManager.default.contents(atPath: file) else { continue }
                target.run(Array(data))
                count += 1
            }
        }
        print("\(target.name): \(count) inputs replayed, every invariant held")
        return 0
    }
}
