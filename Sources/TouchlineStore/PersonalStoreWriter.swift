import Synchronization

/// What one commit of ``TokenOperation``s changed, as the store decided it.
public struct TokenWriteSummary: Sendable, Equatable {
    /// Tokens the commit really deactivated: a `.deactivateToken` for a token already inactive,
    /// unknown, or registered again after APNs' timestamp changes nothing and is not counted.
    public var tokensDeactivated = 0

    public init(tokensDeactivated: Int = 0) { self.tokensDeactivated = tokensDeactivated }
}

/// Durable writes of the personal side: the token registry (register/replace, deactivate on a
/// 410, delete), personal jobs (create, checkpoint progress, finish, retries), dead letters
/// (record, mark replayed), idempotency records and this store's webhook outbox.
///
/// Keeps the contract of ``DurableStoreWriter``; in particular a list of operations is one
/// all-or-nothing batch, so a job's checkpoint commits with the outcomes it accounts for, and
/// an `Idempotency-Key` with the jobs of its request. What each operation does is the
/// operation's own documentation (``TokenOperation``); the rules a second backend must follow
/// are held by the contract tests (docs/storage.md, "Contracts").
public protocol PersonalStoreWriter: DurableStoreWriter {
    /// Commits `operations` all-or-nothing and tells what the commit changed: only the store
    /// knows whether a 410's deactivation found an active token to deactivate. The completion
    /// runs on the writer's thread once the operations are durable (or have failed).
    func submit(summarizing operations: [TokenOperation],
                completion: @escaping @Sendable (Result<TokenWriteSummary, StoreError>) -> Void)
}

extension PersonalStoreWriter {
    /// ``submit(summarizing:completion:)`` without the summary.
    public func submit(_ operations: [TokenOperation], completion: @escaping @Sendable (Result<Void, StoreError>) -> Void) {
        submit(summarizing: operations) { completion($0.map { _ in () }) }
    }

    /// Submits `operations` and waits for them to be durable (control paths and tests).
    public func submit(_ operations: [TokenOperation]) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            submit(operations) { continuation.resume(with: $0) }
        }
    }

    /// Like ``submit(_:)``, answering the summary.
    public func submit(summarizing operations: [TokenOperation]) async throws -> TokenWriteSummary {
        try await withCheckedThrowingContinuation { continuation in
            submit(summarizing: operations) { continuation.resume(with: $0) }
        }
    }
}

extension StoreWriter: PersonalStoreWriter {
    /// Commits `operations` in the same group commit as channel batches (their own savepoint).
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
}
