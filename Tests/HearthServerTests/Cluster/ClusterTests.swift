import AsyncHTTPClient
import Foundation
import HearthCore
import HearthEngine
import HearthRealtimeClient
@testable import HearthCluster
@testable import HearthServer
import HearthStorage
import HearthTestSupport
import NIOCore
import NIOHTTP1
import Synchronization
import Testing

/// Several nodes sharing one storage: writes reach every node in order, any node takes any write, the
/// owner's death or hang moves the database, and a stale owner can never commit.
@Suite(.serialized) struct ClusterTests {
    @Test func aWriteOnTheOwnerIsReadOnTheOtherNodes() async throws {
        try await ClusterTestNodes.run { nodes in
            try await nodes.start("a")
            #expect(try await nodes.call("a", .PUT, "/greeting.json", #""hello""#).status == .ok)
            try await nodes.start("b")
            try await nodes.start("c")
            #expect(nodes.cluster.owner(of: "demo") == "a")
            #expect(try await nodes.call("a", .PUT, "/counter.json", "1").status == .ok)
            for node in ["b", "c"] {
                let reply = try await nodes.call(node, .GET, "/.json")
                #expect(reply.body == #"{"counter":1,"greeting":"hello"}"#)
            }
        }
    }

    /// Owners spread: once the node the rendezvous hash prefers for a database has been up for the
    /// settling time, the owner hands the database over to it, and nothing written before is lost.
    @Test func anOwnerHandsADatabaseToItsPreferredNodeOnceThatNodeHasSettled() async throws {
        #expect(RendezvousHash.preferred(for: "demo", among: ["a", "b"]) == "b")
        try await ClusterTestNodes.run { nodes in
            try await nodes.start("a", handOffSettling: .milliseconds(300))
            #expect(try await nodes.call("a", .PUT, "/before.json", "1").status == .ok)
            #expect(nodes.cluster.owner(of: "demo") == "a")
            try await nodes.start("b", handOffSettling: .milliseconds(300))
            try await eventually { nodes.cluster.owner(of: "demo") == "b" }
            try await eventually { (try? await nodes.call("a", .PUT, "/after.json", "2"))?.status == .ok }
            #expect(try await nodes.call("b", .GET, "/.json").body == #"{"after":2,"before":1}"#)
        }
    }

    /// `--advertise https://…` with `--cluster-ca`: forwarded writes and the commit push go over TLS,
    /// trusting the nodes' own CA.
    @Test func nodesThatServeTLSForwardAndPushToEachOtherOverHTTPS() async throws {
        let certificates = try await TestCertificates.make()
        defer { certificates.remove() }
        try await ClusterTestNodes.run(tls: certificates) { nodes in
            try await nodes.start("a")
            _ = try await nodes.call("a", .PUT, "/seed.json", "true")
            try await nodes.start("b")
            #expect(nodes.cluster.owner(of: "demo") == "a")
            // Forwarded from b to a over https.
            let put = try await nodes.call("b", .PUT, "/users/ada.json", #"{"name":"Ada"}"#)
            #expect(put.status == .ok)
            #expect(try await nodes.call("a", .GET, "/users/ada/name.json").body == #""Ada""#)
            // Pushed from a to b over https.
            let registry = try nodes.registry("b")
            try await eventually { (registry.cluster as? ClusterContext)?.peers.isLive("a") == true }
            #expect(try await nodes.call("a", .PUT, "/counter.json", "7").status == .ok)
            try await eventually { (try? await nodes.call("b", .GET, "/counter.json"))?.body == "7" }
        }
    }

    @Test func aWriteOnAFollowerIsForwardedAndReadBackThere() async throws {
        try await ClusterTestNodes.run { nodes in
            try await nodes.start("a")
            _ = try await nodes.call("a", .PUT, "/seed.json", "true")
            try await nodes.start("b")
            let put = try await nodes.call("b", .PUT, "/users/ada.json", #"{"name":"Ada","at":{".sv":"timestamp"}}"#)
            #expect(put.status == .ok)
            #expect(put.json?["name"] == .string("Ada"))
            // Read-your-writes on the follower, and the owner has it too.
            #expect(try await nodes.call("b", .GET, "/users/ada/name.json").body == #""Ada""#)
            #expect(try await nodes.call("a", .GET, "/users/ada/name.json").body == #""Ada""#)
            // The server value was resolved once, by the owner: both nodes hold the same number.
            let onA = try await nodes.call("a", .GET, "/users/ada/at.json").body
            #expect(try await nodes.call("b", .GET, "/users/ada/at.json").body == onA)
            // Refusals come back from the owner in Firebase's shape.
            let bad = try await nodes.call("b", .PATCH, "/.json", #"{"a": 1, "a/b": 2}"#)
            #expect(bad.status == .badRequest)
            #expect(nodes.cluster.owner(of: "demo") == "a")
        }
    }

    /// Both nodes add to one list with compare-and-set (`if-match`), as a client counts: every addition
    /// lands exactly once. Each carries a token of its own, so that after a 503 (the write's 5 s patience ran
    /// out on a loaded machine: "try again", outcome unknown) the client learns from its next read whether
    /// it landed, as a real client must.
    @Test func compareAndSetFromBothNodesCountsEveryIncrementOnce() async throws {
        try await ClusterTestNodes.run { nodes in
            try await nodes.start("a")
            _ = try await nodes.call("a", .PUT, "/tokens.json", #"["start"]"#)
            try await nodes.start("b")
            let increments = 20
            func tokens(_ json: JSONValue?) -> [String]? {
                guard case .array(let items)? = json else { return nil }
                return items.compactMap { if case .string(let token) = $0 { token } else { nil } }
            }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for node in ["a", "b"] {
                    group.addTask {
                        var landed = 0
                        var attempt = 0
                        var unsure: String?
                        while landed < increments {
                            let read = try await nodes.call(node, .GET, "/tokens.json", headers: [("X-Firebase-ETag", "true")])
                            // A read waits until this node has every committed write; on a starved machine it may
                            // be told to try again.
                            if read.status == .serviceUnavailable { continue }
                            guard let list = tokens(read.json), let etag = read.etag else { throw ConditionNotMet() }
                            if let token = unsure {
                                if list.contains(token) { landed += 1 }
                                unsure = nil
                                continue
                            }
                            attempt += 1
                            let token = "\(node)-\(attempt)"
                            let body = JSONValue.array((list + [token]).map(JSONValue.string)).jsonText
                            let write = try await nodes.call(node, .PUT, "/tokens.json", body, headers: [("if-match", etag)])
                            switch write.status {
                            case .ok: landed += 1
                            case .preconditionFailed: break
                            case .serviceUnavailable: unsure = token
                            default: Issue.record("\(node): \(write.status) \(write.body)")
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            for node in ["a", "b"] {
                let list = try #require(tokens(try await nodes.call(node, .GET, "/tokens.json").json))
                #expect(list.count == 1 + 2 * increments, "\(node)")
                #expect(Set(list).count == list.count, "\(node)")
                #expect(list.filter { $0.hasPrefix("a-") }.count == increments, "\(node)")
            }
        }
    }

    @Test func whenTheOwnerDiesAnotherNodeTakesOverWithEverythingAcknowledged() async throws {
        try await ClusterTestNodes.run { nodes in
            try await nodes.start("a")
            try await nodes.start("b")
            try await nodes.start("c")
            _ = try await nodes.call("a", .PUT, "/before.json", "1")
            for index in 0..<10 {
                #expect(try await nodes.call("b", .PUT, "/items/\(index).json", "\(index)").status == .ok)
            }
            await nodes.crash("a")
            // Another node takes the database over, and writes on the followers go there. (A write sent to
            // "a" as it died would get 503: its outcome would be unknown.)
            try await eventually { nodes.cluster.owner(of: "demo").map { $0 != "a" } ?? false }
            #expect(try await nodes.call("b", .PUT, "/after.json", "2").status == .ok)
            let owner = try #require(nodes.cluster.owner(of: "demo"))
            #expect(owner == "b" || owner == "c")
            for node in ["b", "c"] {
                let all = try await nodes.call(node, .GET, "/.json").json
                #expect(all?["before"] == .number(1))
                #expect(all?["after"] == .number(2))
                if case .array(let items)? = all?["items"] { #expect(items.count == 10) } else { Issue.record("items missing on \(node)") }
            }
        }
    }

    @Test func aHungOwnerCannotCommitAndItsWritesGoToTheNewOwner() async throws {
        try await ClusterTestNodes.run { nodes in
            try await nodes.start("a")
            try await nodes.start("b")
            _ = try await nodes.call("a", .PUT, "/x.json", "1")
            #expect(nodes.cluster.owner(of: "demo") == "a")
            // "a" hangs: the others see it dead and "b" takes the database over…
            nodes.cluster.pause("a")
            try await eventually { nodes.cluster.owner(of: "demo") == "b" }
            #expect(try await nodes.call("b", .PUT, "/x.json", "2").status == .ok)
            // …and when "a" goes on, its write is fenced off and runs on "b", against the current data.
            let etagOnB = try #require(try await nodes.call("b", .GET, "/x.json", headers: [("X-Firebase-ETag", "true")]).etag)
            let cas = try await nodes.call("a", .PUT, "/x.json", "3", headers: [("if-match", etagOnB)])
            #expect(cas.status == .ok)
            #expect(try await nodes.call("b", .GET, "/x.json").body == "3")
            #expect(try await nodes.call("a", .GET, "/x.json").body == "3")
        }
    }

    @Test func rulesSetOnOneNodeAreEnforcedOnEveryNode() async throws {
        try await ClusterTestNodes.run { nodes in
            try await nodes.start("a")
            _ = try await nodes.call("a", .PUT, "/.json", #"{"public": 1, "secret": 2}"#)
            try await nodes.start("b")
            let rules = #"{"rules": {"public": {".read": true, ".write": true}}}"#
            #expect(try await nodes.call("b", .PUT, "/.settings/rules.json", rules).status == .ok)
            for node in ["a", "b"] {
                try await eventually { (try? await nodes.call(node, .GET, "/.settings/rules.json"))?.json?["rules"]?["public"] != nil }
                #expect(try await nodes.call(node, .GET, "/public.json", admin: false).status == .ok)
                #expect(try await nodes.call(node, .GET, "/secret.json", admin: false).status == .unauthorized)
                #expect(try await nodes.call(node, .PUT, "/public.json", "\"from \(node)\"", admin: false).status == .ok)
                #expect(try await nodes.call(node, .PUT, "/secret.json", "3", admin: false).status == .unauthorized)
            }
            #expect(try await nodes.call("a", .GET, "/.json").body == #"{"public":"from b","secret":2}"#)
        }
    }

    @Test func eventStreamsOnOtherNodesGetEveryWriteInOrder() async throws {
        try await ClusterTestNodes.run { nodes in
            try await nodes.start("a")
            _ = try await nodes.call("a", .PUT, "/log.json", "null")
            try await nodes.start("b")
            let port = try #require(nodes.nodes.withLock { $0["b"]?.port })
            var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/log.json?ns=demo")
            request.headers.add(name: "Accept", value: "text/event-stream")
            request.headers.add(name: "Authorization", value: "Bearer \(ClusterTestNodes.secret)")
            let response = try await nodes.http.execute(request, timeout: .seconds(30))
            let count = 25
            let writer = Task {
                for index in 0..<count { _ = try await nodes.call("a", .PUT, "/log/\(index).json", "\(index)") }
            }
            var received: [Int] = []
            var text = ""
            for try await chunk in response.body {
                text += String(buffer: chunk)
                while let range = text.range(of: "\n\n") {
                    let event = String(text[..<range.lowerBound])
                    text.removeSubrange(..<range.upperBound)
                    guard event.hasPrefix("event: put"), let dataLine = event.split(separator: "\n").last, dataLine.hasPrefix("data: ") else { continue }
                    let json = try JSONValue(parsing: String(dataLine.dropFirst(6)))
                    if case .number(let value)? = json["data"], json["path"] != .string("/") { received.append(Int(value)) }
                }
                if received.count == count { break }
            }
            try await writer.value
            #expect(received == Array(0..<count))
        }
    }
}

/// onDisconnect writes outlive the node that held the connection.
@Suite(.serialized) struct ClusterOnDisconnectTests {
    static func request(_ number: Int, _ action: String, _ body: String) -> String {
        #"{"t":"d","d":{"r":\#(number),"a":"\#(action)","b":\#(body)}}"#
    }

    /// A WebSocket connection to `node`, signed in as the admin.
    func connect(_ nodes: ClusterTestNodes, _ node: String) async throws -> WireConnection {
        let port = try #require(nodes.nodes.withLock { $0[node]?.port })
        let connection = try await WireConnection.connect(host: "127.0.0.1", port: port, path: "/.ws?v=5&ns=demo")
        _ = try await connection.nextMessage()
        try await connection.send(Self.request(1, "auth", #"{"cred":"\#(ClusterTestNodes.secret)"}"#))
        let reply = try await connection.nextMessage()
        #expect(reply?.contains(#""s":"ok""#) == true)
        return connection
    }

    @Test func theWritesOfAConnectionRunWhenItsNodeDies() async throws {
        try await ClusterTestNodes.run { nodes in
            try await nodes.start("a")
            _ = try await nodes.call("a", .PUT, "/presence/ada.json", #""online""#)
            try await nodes.start("b")
            let connection = try await connect(nodes, "b")
            try await connection.send(Self.request(2, "o", #"{"p":"/presence/ada","d":"offline"}"#))
            #expect(try await connection.nextMessage() == #"{"t":"d","d":{"r":2,"b":{"s":"ok","d":""}}}"#)
            try await connection.send(Self.request(3, "om", #"{"p":"/","d":{"lastSeen/ada":{".sv":"timestamp"},"rooms/r1/ada":null}}"#))
            #expect(try await connection.nextMessage() == #"{"t":"d","d":{"r":3,"b":{"s":"ok","d":""}}}"#)
            // "b" dies (its session with the shared storage ends) while the connection is still open: only
            // another node can run the writes now.
            nodes.cluster.kill("b")
            try await eventually { (try? await nodes.call("a", .GET, "/presence/ada.json"))?.body == #""offline""# }
            let lastSeen = try await nodes.call("a", .GET, "/lastSeen/ada.json")
            if case .number(let time)? = lastSeen.json { #expect(time > 1_700_000_000_000) } else { Issue.record("lastSeen not written: \(lastSeen.body)") }
            await connection.close()
        }
    }

    /// The shared storage restarts: every node's session ends, and until a node's first heartbeat on
    /// its new session the others see it dead. The node back first must not run the onDisconnect
    /// writes of the others' connections, which are still open, nor its own.
    @Test func theWritesOfLiveConnectionsDoNotRunWhenTheStorageRestarts() async throws {
        try await ClusterTestNodes.run { nodes in
            try await nodes.start("a")
            _ = try await nodes.call("a", .PUT, "/presence.json", #"{"ada":"online","bob":"online"}"#)
            try await nodes.start("b")
            let onB = try await connect(nodes, "b")
            try await onB.send(Self.request(2, "o", #"{"p":"/presence/ada","d":"offline"}"#))
            #expect(try await onB.nextMessage() == #"{"t":"d","d":{"r":2,"b":{"s":"ok","d":""}}}"#)
            let onA = try await connect(nodes, "a")
            try await onA.send(Self.request(2, "o", #"{"p":"/presence/bob","d":"offline"}"#))
            #expect(try await onA.nextMessage() == #"{"t":"d","d":{"r":2,"b":{"s":"ok","d":""}}}"#)

            for node in ["a", "b"] {
                nodes.cluster.kill(node)
                nodes.cluster.reconnect(node)
            }
            nodes.cluster.heartbeat("a")
            try await Task.sleep(for: .milliseconds(500))
            nodes.cluster.heartbeat("b")
            // Past the grace: any node that ran the others' writes has done so.
            try await Task.sleep(for: ClusterCoordinator.defaultOrphanGrace + .seconds(1))
            let presence = try await nodes.call("a", .GET, "/presence.json")
            #expect(presence.body == #"{"ada":"online","bob":"online"}"#)
            await onA.close()
            await onB.close()
        }
    }

    @Test func cancelledWritesDoNotRunWhenTheNodeDies() async throws {
        try await ClusterTestNodes.run { nodes in
            try await nodes.start("a")
            _ = try await nodes.call("a", .PUT, "/presence/ada.json", #""online""#)
            try await nodes.start("b")
            let connection = try await connect(nodes, "b")
            try await connection.send(Self.request(2, "o", #"{"p":"/presence/ada","d":"offline"}"#))
            _ = try await connection.nextMessage()
            try await connection.send(Self.request(3, "oc", #"{"p":"/presence"}"#))
            #expect(try await connection.nextMessage() == #"{"t":"d","d":{"r":3,"b":{"s":"ok","d":""}}}"#)
            try await connection.send(Self.request(4, "o", #"{"p":"/canary","d":"ran"}"#))
            _ = try await connection.nextMessage()
            nodes.cluster.kill("b")
            // The canary registered after the cancel runs; the cancelled write must not have.
            try await eventually { (try? await nodes.call("a", .GET, "/canary.json"))?.body == #""ran""# }
            #expect(try await nodes.call("a", .GET, "/presence/ada.json").body == #""online""#)
            await connection.close()
        }
    }
}
