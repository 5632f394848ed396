import Foundation

/// The bytes of the files under `path` (their sizes, as a reading of what a store keeps on disk).
func directoryBytes(_ path: String) -> Int {
    guard let files = FileManager.default.enumerator(atPath: path) else { return 0 }
    var total = 0
    for case let file as String in files {
        total += ((try? FileManager.default.attributesOfItem(atPath: path + "/" + file))?[.size] as? Int) ?? 0
    }
    return total
}
