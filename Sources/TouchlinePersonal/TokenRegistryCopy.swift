/// This gateway's copy of the token registry. On its own, its file is the registry; in a
/// cluster, the copy is built from the registry's log while the gateway already serves
/// (docs/cluster.md, "The shared token registry"): reads before it is complete would miss tokens.
package protocol TokenRegistryCopy: Sendable {
    /// Whether the copy holds every token the registry held when the gateway started.
    var isCaughtUp: Bool { get }
    /// How far the copy is: the log sequence applied, of the one it catches up to.
    var catchUpProgress: (applied: UInt64, target: UInt64) { get }
}
