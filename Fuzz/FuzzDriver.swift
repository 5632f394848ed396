#if FUZZING
import Glibc

/// libFuzzer's entry point for a program that has its own `main`.
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

/// The target libFuzzer drives (libFuzzer takes a C function, which captures nothing).
nonisolated(unsafe) private var current: FuzzTarget?

enum FuzzDriver {
    /// Runs libFuzzer on `target`; `arguments` are the target name and libFuzzer's options.
    static func run(_ target: FuzzTarget, arguments: [String]) -> Int32 {
        current = target
        var argc = Int32(arguments.count)
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = UnsafeMutablePointer.allocate(capacity: arguments.count + 1)
        for (index, argument) in arguments.enumerated() { argv![index] = strdup(argument) }
        argv![arguments.count] = nil
        return LLVMFuzzerRunDriver(&argc, &argv) { data, size in
            current!.run(size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size)))
            return 0
        }
    }
}
#endif
