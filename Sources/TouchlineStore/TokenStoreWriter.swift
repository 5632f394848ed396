import Synchronization

/// What one commit of ``TokenOperation``s changed, as the store decided it.
public struct TokenWriteSummary: Sendable, Equatable {
    /// Tokens the commit really deactivated: a `.deactivateToken` for a token already inactive,
    /// unknown, or registered again after APNs' timestamp changes nothing and is not counted.
    public var tokensDeactivated = 0

    public init(tokensDeactivated: Int = 0) { self.tokensDeactivated = tokensDeactivated }
}

extension StoreWriter {
    /// Commits `operations` all-or-nothing, in the same group commit as channel batches; the
    /// completion runs on the writer thread once they are durable (or have failed).
    public func submit(_ operations: [TokenOperation], completion: @escaping @Sendable (Result<Void, StoreError>) -> Void) {
        submit(summarizing: operations) { completion($0.map { _ in () }) }
    }

    /// Like ``submit(_:completion:)``, and tells what the commit changed: only the store knows
    /// whether a 410's deactivation found an active token to deactivate, so counting the
    /// requests instead would overcount re-registered and already inactive tokens.
    public func submit(summarizing operations: [TokenOperation],
                       completion: @escaping @Sendable (Result<TokenWriteSummary, StoreError>) -> Void) {
        let deactivated = Mutex(0)
        enqueue(Job(apply: { db in
            var count = 0
            for operation in operations { count += try TokenRows.apply(operation, on: db) }
            deactivated.withLock { $0 = count }
        }, complete: { error in
            if let error { return completion(.failure(error)) }
            completion(.success(TokenWriteSummary(tokensDeactivated: deactivated.withLock { $0 })))
        }))
    }

    /// Submits `operations` and waits for them to be durable (control paths and tests).
    public func submit(_ operations: [TokenOperation]) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            submit(operations) { continuation.resume(with: $0) }
        }
    }
}
