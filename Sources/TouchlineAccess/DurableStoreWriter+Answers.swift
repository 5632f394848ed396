import TouchlineCore
import TouchlineRuntime
import TouchlineStore

/// How the API answers for its stores: every feature refuses the same way while a store is
/// failing, and answers a failed write the same way.
extension DurableStoreWriter {
    /// 503 with `Retry-After` while the store cannot write: nothing is taken that could not be stored.
    package func requireWritable() throws(HTTPError) {
        guard let failure = health.failure else { return }
        throw HTTPError.storeUnavailable(failure)
    }
}

extension HTTPError {
    /// The answer to input whose commit failed, or that came while the store is failing.
    package static func storeUnavailable(_ failure: StoreError) -> HTTPError {
        storeUnavailable(description: "\(failure)")
    }

    private static func storeUnavailable(description: String) -> HTTPError {
        HTTPError(status: 503, code: "store_unavailable",
                  message: "the store cannot write (\(description)); nothing was stored, retry the same request",
                  headers: [("Retry-After", "1")])
    }

    /// The answer to a read that failed: 503 with `Retry-After` when the storage failed (a
    /// partition of a cluster's registry being taken over, a store failing: the same request
    /// will be answered once it recovers), 500 when the store refused the read itself.
    package static func readFailed(_ error: StoreError, reading what: String) -> HTTPError {
        error.isStorageFailure
            ? HTTPError(status: 503, code: "store_unavailable", message: "reading \(what) failed (\(error)); retry the same request",
                        headers: [("Retry-After", "1")])
            : HTTPError(status: 500, code: "store_failed", message: "reading \(what) failed: \(error)")
    }

    /// The answer to a write that failed: 503 with `Retry-After` when the storage failed (the
    /// retry will be stored once it recovers), 500 when the store refused this write itself.
    package static func writeFailed(_ error: StoreError, saving what: String) -> HTTPError {
        writeFailed(description: "\(error)", isStorageFailure: error.isStorageFailure, saving: what)
    }

    /// ``writeFailed(_:saving:)`` for a failure the channel lifecycle reported.
    package static func writeFailed(_ failure: ChannelLifecycle<HTTPRequest>.StoreFailure, saving what: String) -> HTTPError {
        writeFailed(description: failure.message, isStorageFailure: failure.isStorageFailure, saving: what)
    }

    private static func writeFailed(description: String, isStorageFailure: Bool, saving what: String) -> HTTPError {
        isStorageFailure ? storeUnavailable(description: description)
            : HTTPError(status: 500, code: "store_failed", message: "saving \(what) failed: \(description)")
    }
}
