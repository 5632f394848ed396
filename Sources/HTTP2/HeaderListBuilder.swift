import CNGHTTP2

/// Builds the nghttp2 header list of each request without allocating per request.
///
/// A ``HeaderTemplate``'s pseudo-headers and fixed headers are encoded once into C memory owned by
/// a ``TemplateHeaderBlock`` (cached per template object). For every request, the block's entries,
/// the `:path` and the ``DynamicHeaders`` are copied into one scratch list and byte arena reused
/// by every submit: nghttp2 copies names and values during `nghttp2_submit_request` (no NO_COPY
/// flags are set), so the scratch is free again as soon as the submit returns.
///
/// Loop-confined, like the connection that owns it.
final class HeaderListBuilder {
    private var blocks: [ObjectIdentifier: TemplateHeaderBlock] = [:]
    private var lastBlock: TemplateHeaderBlock?
    private var list: UnsafeMutablePointer<nghttp2_nv>
    private var listCapacity: Int
    private var bytes: UnsafeMutablePointer<UInt8>
    private var byteCapacity: Int
    /// Templates are few and long-lived; past this many the cache is simply rebuilt.
    private static let maxCachedTemplates = 64

    init() {
        listCapacity = 32
        list = .allocate(capacity: listCapacity)
        byteCapacity = 4096
        bytes = .allocate(capacity: byteCapacity)
    }

    deinit {
        list.deallocate()
        bytes.deallocate()
    }

    /// Calls `body` with the request's header list: `:method`, `:scheme`, `:authority`, `:path`,
    /// the template's headers (HPACK-indexed), then the dynamic headers (indexed only when asked).
    func withHeaderList<R>(for request: HTTP2Request, _ body: (UnsafePointer<nghttp2_nv>, Int) -> R) -> R {
        let block = block(for: request.template)
        let dynamic = request.headers
        let count = block.count + 1 + dynamic.count
        reserveList(count)
        var byteCount = request.path.utf8.count
        for i in 0..<dynamic.count { byteCount += dynamic[i].value.utf8.count }
        reserveBytes(byteCount)

        var cursor = bytes
        list.update(from: block.entries, count: TemplateHeaderBlock.pseudoCount)
        list[TemplateHeaderBlock.pseudoCount] = entry(name: ":path", value: request.path, flags: NGHTTP2_NV_FLAG_NONE, cursor: &cursor)
        var index = TemplateHeaderBlock.pseudoCount + 1
        (list + index).update(from: block.entries + TemplateHeaderBlock.pseudoCount, count: block.count - TemplateHeaderBlock.pseudoCount)
        index += block.count - TemplateHeaderBlock.pseudoCount
        for i in 0..<dynamic.count {
            let field = dynamic[i]
            list[index] = entry(name: field.name, value: field.value,
                                flags: field.indexed ? NGHTTP2_NV_FLAG_NONE : NGHTTP2_NV_FLAG_NO_INDEX, cursor: &cursor)
            index += 1
        }
        return body(list, count)
    }

    private func block(for template: HeaderTemplate) -> TemplateHeaderBlock {
        if let lastBlock, lastBlock.template === template { return lastBlock }
        let key = ObjectIdentifier(template)
        let block: TemplateHeaderBlock
        if let cached = blocks[key] {
            block = cached
        } else {
            if blocks.count >= HeaderListBuilder.maxCachedTemplates { blocks.removeAll() }
            block = TemplateHeaderBlock(template)
            blocks[key] = block
        }
        lastBlock = block
        return block
    }

    /// An entry whose value is copied into the byte arena at `cursor` (which advances).
    private func entry(name: StaticString, value: String, flags: nghttp2_nv_flag,
                       cursor: inout UnsafeMutablePointer<UInt8>) -> nghttp2_nv {
        let valueStart = cursor
        let length = copyUTF8(value, to: &cursor)
        return nghttp2_nv(name: UnsafeMutablePointer(mutating: name.utf8Start), value: valueStart,
                          namelen: name.utf8CodeUnitCount, valuelen: length, flags: UInt8(flags.rawValue))
    }

    private func reserveList(_ count: Int) {
        guard count > listCapacity else { return }
        list.deallocate()
        listCapacity = count * 2
        list = .allocate(capacity: listCapacity)
    }

    private func reserveBytes(_ count: Int) {
        guard count > byteCapacity else { return }
        bytes.deallocate()
        byteCapacity = count * 2
        bytes = .allocate(capacity: byteCapacity)
    }
}

/// A template's `:method`, `:scheme`, `:authority` and fixed headers as nghttp2 entries in C memory.
///
/// Keeps the template alive so that its object identity (the cache key) cannot be reused by
/// another template while the block is cached.
final class TemplateHeaderBlock {
    let template: HeaderTemplate
    /// `:method`, `:scheme`, `:authority`.
    static let pseudoCount = 3
    let entries: UnsafeMutablePointer<nghttp2_nv>
    let count: Int
    private let storage: UnsafeMutablePointer<UInt8>

    init(_ template: HeaderTemplate) {
        self.template = template
        var fields: [(String, String)] = [(":method", template.method.rawValue), (":scheme", "https"), (":authority", template.authority)]
        for header in template.headers { fields.append((header.name, header.value)) }
        count = fields.count
        entries = .allocate(capacity: count)
        storage = .allocate(capacity: max(1, fields.reduce(0) { $0 + $1.0.utf8.count + $1.1.utf8.count }))
        var cursor = storage
        for (i, (name, value)) in fields.enumerated() {
            let namePointer = cursor
            let nameLength = copyUTF8(name, to: &cursor)
            let valuePointer = cursor
            let valueLength = copyUTF8(value, to: &cursor)
            entries[i] = nghttp2_nv(name: namePointer, value: valuePointer, namelen: nameLength, valuelen: valueLength,
                                    flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue))
        }
    }

    deinit {
        entries.deallocate()
        storage.deallocate()
    }
}

/// Copies the UTF-8 bytes of `string` to `cursor`, advancing it; returns the byte count.
/// Native strings are copied straight from their storage without allocating.
private func copyUTF8(_ string: String, to cursor: inout UnsafeMutablePointer<UInt8>) -> Int {
    let start = cursor
    let copied = string.utf8.withContiguousStorageIfAvailable { source -> Int in
        if let base = source.baseAddress { start.update(from: base, count: source.count) }
        return source.count
    }
    let length: Int
    if let copied {
        length = copied
    } else {
        var index = 0
        for byte in string.utf8 {
            start[index] = byte
            index += 1
        }
        length = index
    }
    cursor += length
    return length
}
