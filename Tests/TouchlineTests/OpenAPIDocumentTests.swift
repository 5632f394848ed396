import Foundation
import Testing
import TestSlots
@testable import Touchline
@testable import TouchlineAccess
import TouchlineCore
import TouchlineTesting

/// docs/openapi.json and docs/api.md against the gateway as built: the document is OpenAPI
/// 3.0.x and self-consistent, and it describes exactly the routes the router serves.
///
/// The served routes come from the running gateway's route table (method, pattern, scope), and
/// the same gateway is probed over HTTP (a keyed route answers 401 without a key, another method
/// on its path 405), so the table is checked against what the server really does. The route
/// tables come from gateways in process on the in-memory backends; only the probe over HTTP
/// takes a heavy slot.
@Suite("OpenAPI document", .gatewaysInProcess)
struct OpenAPIDocumentTests {
    /// The repository root, found from this file's place in `Tests/TouchlineTests/`.
    private static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    private static let methods = ["get", "put", "post", "delete", "patch", "head", "options", "trace"]

    private struct Operation: Hashable, CustomStringConvertible {
        var method: String
        var path: String
        var description: String { "\(method) \(path)" }
    }

    private func text(_ relativePath: String) throws -> String {
        try String(contentsOf: Self.root.appendingPathComponent(relativePath), encoding: .utf8)
    }

    private func document() throws -> JSONValue {
        try JSONParser.parse(Array(try text("docs/openapi.json").utf8))
    }

    private func members(_ value: JSONValue?) -> [JSONValue.Member] {
        if case .object(let members)? = value { members } else { [] }
    }

    /// Every method + path pair of the document, methods upper-cased.
    private func documentedOperations(_ document: JSONValue) -> [Operation] {
        members(document[member: "paths"]).flatMap { path in
            members(path.value).filter { Self.methods.contains($0.name) }.map { Operation(method: $0.name.uppercased(), path: path.name) }
        }
    }

    /// The route table of a running gateway; `requireMetricsKey` decides the scope of `/metrics`.
    private func routeTable(requireMetricsKey: Bool = false) async throws -> [APIRouter.Route] {
        let fixture = try GatewayFixture(tier: .inProcess) { $0.metrics = MetricsSettings(requireKey: requireMetricsKey) }
        let routes = fixture.gateway.routes
        await fixture.shutDown()
        return routes
    }

    @Test func isOpenAPI303WithABearerScheme() throws {
        let document = try document()
        let version = try #require(document.string("openapi"))
        #expect(version.hasPrefix("3.0."), "openapi is \(version)")
        #expect(document[member: "info"]?.string("title")?.isEmpty == false)
        #expect(document[member: "info"]?.string("version")?.isEmpty == false)
        let bearer = document[member: "components"]?[member: "securitySchemes"]?[member: "bearerAuth"]
        #expect(bearer?.string("type") == "http")
        #expect(bearer?.string("scheme") == "bearer")
    }

    @Test func documentsExactlyTheRegisteredRoutes() async throws {
        let documented = documentedOperations(try document())
        #expect(Set(documented).count == documented.count)
        let table = try await routeTable()
        let registered = Set(table.map { Operation(method: $0.method.rawValue, path: $0.pattern) })
        #expect(registered.count == table.count, "a route is declared twice")
        #expect(registered.count >= 6, "found only \(registered) in the sources")
        #expect(Set(documented).subtracting(registered).isEmpty, "documented but not served: \(Set(documented).subtracting(registered))")
        #expect(registered.subtracting(documented).isEmpty, "served but not documented: \(registered.subtracting(documented))")
    }

    /// Operations anyone may call: `security` is empty or lists the empty requirement `{}`
    /// (the probes, and `/metrics` unless `metrics.requireKey`).
    private func isPublic(_ operation: Operation, in document: JSONValue) -> Bool {
        guard case .array(let requirements)? = document[member: "paths"]?[member: operation.path]?[member: operation.method.lowercased()]?[member: "security"]
        else { return false }
        return requirements.isEmpty || requirements.contains { members($0).isEmpty }
    }

    /// Open routes are documented without a security requirement, keyed ones with one; a
    /// channel route's scope names a parameter of its path; `/metrics` follows `metrics.requireKey`.
    @Test func theDocumentedSecurityMatchesEachRoutesScope() async throws {
        let document = try document()
        for route in try await routeTable() {
            let operation = Operation(method: route.method.rawValue, path: route.pattern)
            switch route.scope {
            case .open:
                #expect(isPublic(operation, in: document), "\(operation) is open but documented with a key")
            case .anyKey, .admin:
                #expect(!isPublic(operation, in: document), "\(operation) needs a key but is documented open")
            case .channel(let parameter):
                #expect(!isPublic(operation, in: document), "\(operation) needs a key but is documented open")
                #expect(route.pattern.contains("{\(parameter)}"), "\(operation) takes its channel from a missing '\(parameter)'")
            }
        }
        let metrics = try await routeTable(requireMetricsKey: true).first { $0.pattern == "/metrics" }
        #expect(metrics?.scope == .anyKey)
    }

    @Test(.heavy) func theRunningRouterServesExactlyTheDocumentedMethods() async throws {
        let document = try document()
        let documented = documentedOperations(document)
        let fixture = try GatewayFixture()
        let anonymous = GatewayTestClient(port: fixture.port, key: nil)
        for path in Set(documented.map(\.path)) {
            let concrete = path.replacingOccurrences(of: "{id}", with: "probe-1")
            for method in ["GET", "POST", "PUT", "DELETE", "PATCH"] {
                let response = try anonymous.request(method, concrete, json: method == "GET" || method == "DELETE" ? nil : "{}")
                let operation = Operation(method: method, path: path)
                if documented.contains(operation) && isPublic(operation, in: document) {
                    // The route matched and answered without a key.
                    #expect(![401, 404, 405].contains(response.status), "\(method) \(path): \(response.status) \(response.text)")
                } else if documented.contains(operation) {
                    // The route matched: its handler asked for the key.
                    #expect(response.status == 401 && response.errorCode == "missing_api_key", "\(method) \(path): \(response.status) \(response.text)")
                } else {
                    #expect(response.status == 405 && response.errorCode == "method_not_allowed", "\(method) \(path): \(response.status) \(response.text)")
                }
            }
        }
        await fixture.shutDown()
    }

    @Test func everyOperationHasResponsesAndASecurityRequirement() throws {
        let document = try document()
        let schemes = Set(members(document[member: "components"]?[member: "securitySchemes"]).map(\.name))
        for operation in documentedOperations(document) {
            let body = document[member: "paths"]?[member: operation.path]?[member: operation.method.lowercased()]
            let responses = members(body?[member: "responses"])
            #expect(!responses.isEmpty, "\(operation) has no responses")
            #expect(responses.contains { $0.name.hasPrefix("2") }, "\(operation) has no success response")
            for response in responses {
                #expect(response.value.string("description")?.isEmpty == false, "\(operation) \(response.name) has no description")
                guard let status = Int(response.name), status >= 400 else { continue }
                let content = response.value[member: "content"]?[member: "application/json"]
                // `/readyz` answers 503 with its readiness report (what failed), not an error.
                if content?[member: "schema"]?.string("$ref") == "#/components/schemas/Readiness" { continue }
                #expect(content?[member: "schema"]?.string("$ref") == "#/components/schemas/Error", "\(operation) \(response.name)")
                for example in members(content?[member: "examples"]) {
                    #expect(example.value[member: "value"]?.string("error") == example.name, "\(operation) \(response.name) \(example.name)")
                    #expect(example.value[member: "value"]?.string("message")?.isEmpty == false)
                }
            }
            guard case .array(let requirements)? = body?[member: "security"] else {
                Issue.record("\(operation) has no security requirement")
                continue
            }
            for requirement in requirements {
                let names = members(requirement).map(\.name)
                #expect(names.allSatisfy(schemes.contains), "\(operation) names \(names)")
            }
        }
    }

    @Test func everyReferenceResolves() throws {
        let document = try document()
        var references: [String] = []
        func collect(_ value: JSONValue) {
            switch value {
            case .object(let members):
                for member in members {
                    if member.name == "$ref", case .string(let reference) = member.value { references.append(reference) }
                    if member.name == "mapping" { references += self.members(member.value).compactMap { if case .string(let target) = $0.value { target } else { nil } } }
                    collect(member.value)
                }
            case .array(let items): items.forEach(collect)
            default: break
            }
        }
        collect(document)
        #expect(references.count > 50)
        for reference in Set(references) {
            #expect(resolve(reference, in: document) != nil, "\(reference) does not resolve")
        }
    }

    /// Follows a local JSON pointer reference (`#/components/schemas/Error`).
    private func resolve(_ reference: String, in document: JSONValue) -> JSONValue? {
        guard reference.hasPrefix("#/") else { return nil }
        var current: JSONValue? = document
        for token in reference.dropFirst(2).split(separator: "/", omittingEmptySubsequences: false) {
            let name = token.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            current = current?[member: name]
        }
        return current
    }

    @Test func theGuideMentionsEveryPathAndEveryErrorCode() throws {
        let guide = try text("docs/api.md")
        for path in Set(documentedOperations(try document()).map(\.path)) {
            #expect(guide.contains("`\(path)`") || guide.contains(" \(path)"), "docs/api.md does not mention \(path)")
        }
        // Every `error` code the gateway and its HTTP server can send has a row in the guide.
        let pattern = try Regex(#"(?:code|error): "([a-z_]+)"|(?:unauthorized|badRequest)\("([a-z_]+)""#)
        var codes: Set<String> = []
        for directory in ["Sources/Touchline", "Sources/TouchlineRuntime"] {
            let url = Self.root.appendingPathComponent(directory)
            for file in try FileManager.default.subpathsOfDirectory(atPath: url.path) where file.hasSuffix(".swift") {
                let source = try String(contentsOf: url.appendingPathComponent(file), encoding: .utf8)
                for match in source.matches(of: pattern) {
                    if let code = match.output[1].substring ?? match.output[2].substring { codes.insert(String(code)) }
                }
            }
        }
        #expect(codes.count >= 20, "found only \(codes.sorted())")
        for code in codes.sorted() {
            #expect(guide.contains("`\(code)`"), "docs/api.md does not mention the error code \(code)")
        }
    }
}
