/// One stream from several sources' pages, each page holding a source's items after the reader's
/// position in it, in the source's own order: the source whose next item came first goes next
/// (ties by source), so a reader's cursor only ever moves past a prefix of each source, and
/// nothing a later page needs is skipped. `GET /v1/events` merges a gateway's two store files
/// with it (``EventsCursor``), and on a cluster every outbox and every gateway's dead letters
/// (``ClusterCursor``).
package enum TimeOrderedMerge {
    /// At most `limit` items, and the last item taken from each source (the reader's new position there).
    package static func merge<Source: Hashable & Comparable, Item, Time: Comparable>(_ pages: [Source: [Item]], limit: Int,
                                                                             time: (Item) -> Time) -> (items: [Item], last: [Source: Item]) {
        var heads = pages.mapValues { $0[...] }
        var items: [Item] = []
        var last: [Source: Item] = [:]
        while items.count < limit {
            let candidates = heads.filter { !$0.value.isEmpty }
            guard let source = candidates.min(by: { a, b in (time(a.value.first!), a.key) < (time(b.value.first!), b.key) })?.key else { break }
            let item = heads[source]!.removeFirst()
            last[source] = item
            items.append(item)
        }
        return (items, last)
    }
}
