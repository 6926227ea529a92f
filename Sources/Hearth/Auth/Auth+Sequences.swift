import Foundation

extension Auth {
    /// The signed-in user now and after every change, as FirebaseAuth's `authStateChanges` sequence.
    ///
    /// ```swift
    /// for await user in Auth.auth().authStateChanges { print(user?.uid ?? "signed out") }
    /// ```
    public var authStateChanges: AuthStateChangesSequence { AuthStateChangesSequence(self) }

    /// The signed-in user now and whenever their ID token changes (sign-in, sign-out, refresh), as
    /// FirebaseAuth's `idTokenChanges` sequence.
    public var idTokenChanges: IDTokenChangesSequence { IDTokenChangesSequence(self) }

    /// An `AsyncSequence` of ``Auth/addStateDidChangeListener(_:)``'s users; it ends when the task
    /// iterating it is cancelled. Unbounded buffering: every change is seen, in order, and changes
    /// are few (sign-ins and sign-outs).
    public struct AuthStateChangesSequence: AsyncSequence, Sendable {
        public typealias Element = User?
        public typealias Failure = Never
        private let auth: Auth

        public init(_ auth: Auth) { self.auth = auth }

        public func makeAsyncIterator() -> AsyncStream<User?>.Iterator {
            auth.changes(of: .state).makeAsyncIterator()
        }
    }

    /// An `AsyncSequence` of ``Auth/addIDTokenDidChangeListener(_:)``'s users; it ends when the task
    /// iterating it is cancelled. Unbounded buffering, as ``AuthStateChangesSequence`` (a token
    /// changes about once an hour).
    public struct IDTokenChangesSequence: AsyncSequence, Sendable {
        public typealias Element = User?
        public typealias Failure = Never
        private let auth: Auth

        public init(_ auth: Auth) { self.auth = auth }

        public func makeAsyncIterator() -> AsyncStream<User?>.Iterator {
            auth.changes(of: .idToken).makeAsyncIterator()
        }
    }

    /// What a listener of `listeners` hears, as a stream that removes the listener when it ends.
    func changes(of listeners: Listeners) -> AsyncStream<User?> {
        let (stream, continuation) = AsyncStream.makeStream(of: User?.self, bufferingPolicy: .unbounded)
        let number = addListener({ _, user in continuation.yield(user) }, to: listeners)
        continuation.onTermination = { [weak self] _ in self?.removeListener(number, from: listeners) }
        return stream
    }
}
