import Dispatch
import Foundation
import HearthCore
import HearthProtocol
import Synchronization

/// Transactions: the block run on the local value, the hash sent with its output, reruns, and aborts.
extension Repo {
    // MARK: Transactions

    func startTransaction(
        path: DatabasePath,
        update: @escaping @Sendable (MutableData) -> TransactionResult,
        completion: (@Sendable ((any Error)?, Bool, DataSnapshot?) -> Void)?,
        applyLocally: Bool
    ) {
        // A hidden value listener keeps the client's copy of the location fresh while it runs.
        let observer = addObserver(spec: QuerySpec(path: path), type: .value, callback: { _, _ in }, cancel: nil)
        let id = state.withLock { state in
            state.observers[observer]?.isInternal = true
            let id = state.nextTransactionID
            state.nextTransactionID += 1
            state.transactions[id] = Transaction(path: path, update: update, completion: completion, applyLocally: applyLocally, observer: observer)
            return id
        }
        runTransaction(id: id)
    }

    private func runTransaction(id: Int) {
        transactionQueue.async { [self] in
            guard let (transaction, input) = state.withLock({ state -> (Transaction, Node)? in
                guard let transaction = state.transactions[id] else { return nil }
                // One transaction per location at a time, as Firebase's clients run them: a second one
                // sent on top of the first's unconfirmed output fails with it whenever another client
                // wins, and both rerun, so that under contention they ran out of retries.
                let blocked = state.transactions.contains { other in
                    other.key < id && (other.value.path.contains(transaction.path) || transaction.path.contains(other.value.path))
                }
                if blocked {
                    state.transactions[id]!.isWaiting = true
                    return nil
                }
                return (transaction, state.tree.localValue(at: transaction.path))
            }) else { return }
            // The hash of exactly what the block saw (other pending writes included), as Firebase's
            // clients send: the server applies the output only if its value is that input, so an
            // output computed on top of a write that has not landed is refused (datastale) and rerun.
            let serverHash = input.hash
            let data = MutableData(node: input, key: transaction.path.last?.string, now: { [clock] in clock.milliseconds() })
            let result = transaction.update(data)
            state.withLock { state in
                guard state.transactions[id] != nil else { return }
                guard result.committed else {
                    state.transactions[id] = nil
                    resumeWaitingTransactions(&state)
                    removeInternalObserver(&state, transaction.observer)
                    let snapshot = DataSnapshot(reference: DatabaseReference(database: database, path: transaction.path), node: input, index: .key)
                    let completion = transaction.completion
                    deliver(&state, events: [], after: completion.map { c in [{ c(nil, false, snapshot) }] } ?? [])
                    return
                }
                let output = result.node ?? data.node
                let writeID = state.nextWriteID
                state.nextWriteID += 1
                state.transactions[id]!.writeID = writeID
                state.transactions[id]!.output = output
                let events = state.tree.applyUserOverwrite(writeID: writeID, path: transaction.path, node: output, visible: transaction.applyLocally)
                let token = state.machine.makeToken()
                state.operations[token] = .transaction(id: id)
                let body = JSONValue.object([
                    ("p", ClientWire.path(transaction.path)), ("d", output.exportJSON), ("h", .string(serverHash)),
                ])
                send(&state, state.machine.enqueue(token: token, action: "p", body: body, isTransaction: true))
                deliver(&state, events: events)
            }
        }
    }

    func transactionCommitted(_ state: inout State, id: Int, events: inout [RaisedEvent]) -> [@Sendable () -> Void] {
        guard let transaction = state.transactions.removeValue(forKey: id) else { return [] }
        resumeWaitingTransactions(&state)
        if let writeID = transaction.writeID { events += state.tree.ackWrite(writeID: writeID, revert: false) }
        removeInternalObserver(&state, transaction.observer)
        let snapshot = DataSnapshot(reference: DatabaseReference(database: database, path: transaction.path), node: transaction.output, index: .key)
        guard let completion = transaction.completion else { return [] }
        return [{ completion(nil, true, snapshot) }]
    }

    static let maximumTransactionRetries = 25

    func transactionFailed(
        _ state: inout State, id: Int, status: String, reason: String, rerun: Bool, events: inout [RaisedEvent]
    ) -> [@Sendable () -> Void] {
        guard var transaction = state.transactions[id] else { return [] }
        if let writeID = transaction.writeID { events += state.tree.ackWrite(writeID: writeID, revert: true) }
        transaction.writeID = nil
        if rerun {
            if status == "datastale" { transaction.retries += 1 }
            // The first run plus at most 25 retries, as the official SDKs allow.
            if transaction.retries <= Repo.maximumTransactionRetries {
                state.transactions[id] = transaction
                runTransaction(id: id)
                return []
            }
        }
        state.transactions[id] = nil
        resumeWaitingTransactions(&state)
        removeInternalObserver(&state, transaction.observer)
        let error = rerun ? DatabaseError(.maxRetries, "The transaction had too many retries") : DatabaseError(status: status, reason: reason)
        guard let completion = transaction.completion else { return [] }
        let snapshot = DataSnapshot(reference: DatabaseReference(database: database, path: transaction.path), node: state.tree.localValue(at: transaction.path), index: .key)
        return [{ completion(error, false, snapshot) }]
    }

    /// Runs again every waiting transaction: each one still behind an earlier one waits on.
    private func resumeWaitingTransactions(_ state: inout State) {
        for (id, transaction) in state.transactions.sorted(by: { $0.key < $1.key }) where transaction.isWaiting {
            state.transactions[id]!.isWaiting = false
            runTransaction(id: id)
        }
    }

    /// A `set` at or above a running transaction aborts it (Firebase's `set` reason).
    func abortTransactions(_ state: inout State, at path: DatabasePath, events: inout [RaisedEvent]) -> [@Sendable () -> Void] {
        var after: [@Sendable () -> Void] = []
        for (id, transaction) in state.transactions where path.contains(transaction.path) {
            after += transactionFailed(&state, id: id, status: "set", reason: "overridden by a set", rerun: false, events: &events)
        }
        return after
    }
}
