/// Gathers the small frames nghttp2 encodes (a HEADERS frame is tens of bytes, a push body a few
/// hundred) into pieces of one full TLS record before they reach the transport, so that a batch
/// of requests costs a few TLS records and `send` calls instead of one or more per frame.
///
/// Loop-confined, like the connection that owns it.
final class OutputBatch {
    /// The largest TLS record payload.
    static let capacity = 16 * 1024
    private let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: OutputBatch.capacity, alignment: 16)
    /// Bytes gathered and not yet handed to the transport.
    @exclusivity(unchecked) private(set) var count = 0

    deinit { storage.deallocate() }

    func append(_ bytes: UnsafeRawBufferPointer, to transport: any HTTP2ClientTransport) {
        if count + bytes.count > OutputBatch.capacity { flush(to: transport) }
        if bytes.count >= OutputBatch.capacity {
            transport.write(bytes)
        } else {
            UnsafeMutableRawBufferPointer(rebasing: storage[count...]).copyMemory(from: bytes)
            count += bytes.count
        }
    }

    func flush(to transport: any HTTP2ClientTransport) {
        guard count > 0 else { return }
        transport.write(UnsafeRawBufferPointer(rebasing: storage[..<count]))
        count = 0
    }
}
