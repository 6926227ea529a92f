public import Hummingbird
public import NIOCore

/// The context of every HTTP request Hearth serves: Hummingbird's core storage plus the address of the
/// peer that opened the connection, which the identity service's per-address rate limits key on.
///
/// For example:
/// ```swift
/// let router = Router(context: HearthRequestContext.self)
/// router.get("/who") { _, context in context.remoteAddress?.ipAddress ?? "unknown" }
/// ```
public struct HearthRequestContext: RequestContext, RemoteAddressRequestContext {
    /// Hummingbird's per-request storage (logger, parameters, allocator).
    public var coreContext: CoreRequestContextStorage
    /// The connection's peer; nil when there is none (in-process tests).
    public let remoteAddress: SocketAddress?
    /// The connection the request came on: a download hands its file to that connection's pipeline
    /// (`FileRegionDownloads`). Unique while the request is served, which holds the connection.
    public let connection: ObjectIdentifier

    /// Made by Hummingbird for each request, from its channel.
    public init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
        remoteAddress = source.channel.remoteAddress
        connection = ObjectIdentifier(source.channel)
    }
}
