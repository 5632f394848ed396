import TouchlineCore

/// One value for each app a gateway serves, keyed by app name: a runtime, a dispatcher, a
/// policy. The default app (``AppChannelID/defaultApp``, the `apns` block) is an entry like the
/// others, and is always there.
///
/// Lists of apps (metrics, stats, readiness) show the default app first and the others by name,
/// as they always have: ``names`` keeps that order.
package struct PerApp<Value> {
    private let values: [String: Value]
    /// The apps served, the default app first, then by name.
    package let names: [String]

    /// `values` must hold the default app's.
    package init(_ values: [String: Value]) {
        precondition(values[AppChannelID.defaultApp] != nil, "every gateway serves the app '\(AppChannelID.defaultApp)'")
        self.values = values
        names = values.keys.sorted { ($0 == AppChannelID.defaultApp ? 0 : 1, $0) < ($1 == AppChannelID.defaultApp ? 0 : 1, $1) }
    }

    /// Whether `app` is served here.
    package func contains(_ app: String) -> Bool { values[app] != nil }

    /// `app`'s value. Only channels and jobs of served apps are loaded or accepted, so an app not
    /// served (``contains(_:)``) never asks; if one did, it would get the default app's, as an
    /// unqualified channel id or a job stored without an app does.
    package subscript(app: String) -> Value { values[app] ?? values[AppChannelID.defaultApp]! }

    /// Every app's value, in the order of ``names``.
    package var all: [Value] { names.map { values[$0]! } }

    /// Every app's name and value, in the order of ``names``.
    package var entries: [(name: String, value: Value)] { names.map { ($0, values[$0]!) } }

    /// The same apps with each value transformed.
    package func map<Other>(_ transform: (_ app: String, _ value: Value) throws -> Other) rethrows -> PerApp<Other> {
        PerApp<Other>(Dictionary(uniqueKeysWithValues: try entries.map { ($0.name, try transform($0.name, $0.value)) }))
    }
}

extension PerApp: Sendable where Value: Sendable {}
