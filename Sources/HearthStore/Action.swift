/// Something that happened, dispatched to a ``Store`` for its reducer to fold into the state.
///
/// Actions are plain values; make them `Equatable` so a `TestStore` can compare them.
///
/// For example:
/// ```swift
/// struct StarTapped: Action, Equatable { var postID: String }
/// store.dispatch(StarTapped(postID: post.identifier!))
/// ```
public protocol Action: Sendable {}
