extension StoreWriter {
    /// Commits `operations` all-or-nothing, in the same group commit as channel batches; the
    /// completion runs on the writer thread once they are durable (or have failed).
    public func submit(_ operations: [TokenOperation], completion: @escaping @Sendable (Result<Void, StoreError>) -> Void) {
        enqueue(Job(apply: { db in
            for operation in operations { try TokenRows.apply(operation, on: db) }
        }, complete: { error in
            completion(error.map { .failure($0) } ?? .success(()))
        }))
    }

    /// Submits `operations` and waits for them to be durable (control paths and tests).
    public func submit(_ operations: [TokenOperation]) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            submit(operations) { continuation.resume(with: $0) }
        }
    }
}
