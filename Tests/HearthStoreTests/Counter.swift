import HearthStore

/// The smallest app: a count, actions that change it, and effects that dispatch later.
struct Counter: Equatable, Sendable {
    var count = 0
    var reported: [Int] = []
}

struct Increment: Action, Equatable {}
struct IncrementLater: Action, Equatable {}
struct Report: Action, Equatable { var count: Int }
struct Wait: Action, Equatable {}

let counterReducer = Reducer<Counter> { state, action in
    switch action {
    case is Increment: state.count += 1
    case let report as Report: state.reported.append(report.count)
    default: break
    }
}

/// `IncrementLater` starts an effect that dispatches `Increment`, then reports the count it sees.
/// `Wait` starts an effect that never ends on its own.
let counterEffects: @MainActor @Sendable (any Action, Counter) -> Effect<Counter>? = { action, _ in
    switch action {
    case is IncrementLater:
        Effect { store in
            await Task.yield()
            store.dispatch(Increment())
            store.dispatch(Report(count: store.state.count))
        }
    case is Wait:
        Effect { _ in
            // Until cancelled.
            let (never, _) = AsyncStream.makeStream(of: Void.self)
            for await _ in never {}
        }
    default:
        nil
    }
}
