import Synchronization

/// One connection attempt that a timeout (or the cancellation of the connection loop) can abandon
/// even when the transport's connect never returns: the first of the three to finish decides, and a
/// socket that opens after the attempt was abandoned is closed at once.
final class ConnectAttempt: Sendable {
    private enum Stage {
        case waiting
        case running(CheckedContinuation<any WebSocketConnection, any Error>)
        case failed(any Error)
        case finished
    }

    private let stage = Mutex<Stage>(.waiting)
    /// The task running the transport's connect: cancelled when the attempt is abandoned, so a connect
    /// that hangs (a server that never answers the upgrade) lets go of its socket.
    private let work = Mutex<(task: Task<Void, Never>?, abandoned: Bool)>((nil, false))

    /// Runs `connect` and returns its socket, unless ``fail(_:)`` comes first.
    func run(_ connect: @escaping @Sendable () async throws -> any WebSocketConnection) async throws -> any WebSocketConnection {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let early = stage.withLock { stage -> (any Error)? in
                    if case .failed(let error) = stage {
                        stage = .finished
                        return error
                    }
                    stage = .running(continuation)
                    return nil
                }
                if let early {
                    continuation.resume(throwing: early)
                    return
                }
                let task = Task {
                    do {
                        let socket = try await connect()
                        if !self.finish(.success(socket)) { socket.close() }
                    } catch {
                        _ = self.finish(.failure(error))
                    }
                }
                let abandoned = work.withLock { work in
                    work.task = task
                    return work.abandoned
                }
                if abandoned { task.cancel() }
            }
        } onCancel: {
            fail(CancellationError())
        }
    }

    /// Ends the attempt with `error` if it has not ended yet, and stops its connect.
    func fail(_ error: any Error) {
        guard finish(.failure(error)) else { return }
        let task = work.withLock { work in
            work.abandoned = true
            return work.task
        }
        task?.cancel()
    }

    /// Resumes the waiting caller once; false when the attempt had already ended.
    private func finish(_ result: Result<any WebSocketConnection, any Error>) -> Bool {
        let continuation = stage.withLock { stage -> CheckedContinuation<any WebSocketConnection, any Error>?? in
            switch stage {
            case .waiting:
                if case .failure(let error) = result { stage = .failed(error) }
                return .some(nil)
            case .running(let continuation):
                stage = .finished
                return continuation
            case .failed, .finished:
                return nil
            }
        }
        guard let continuation else { return false }
        continuation?.resume(with: result)
        return continuation != nil
    }
}
