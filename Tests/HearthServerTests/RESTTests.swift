import Foundation
import HearthAccess
import HearthCore
@testable import HearthServer
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@Suite struct RESTTests {
    @Test func putGetPostPatchDelete() async throws {
        try await TestServer().run { client, _ async throws in
            var reply = try await client.call(.put, "/users/ada.json", #"{"name":"Ada","born":1815}"#)
            #expect(reply.status == .ok)
            #expect(reply.body == #"{"born":1815,"name":"Ada"}"#)
            #expect(reply.headers[.contentType] == "application/json; charset=utf-8")
            #expect(reply.headers[.accessControlAllowOrigin] == "*")
            reply = try await client.call(.get, "/users/ada/name.json")
            #expect(reply.body == #""Ada""#)
            reply = try await client.call(.post, "/users/ada/notes.json", #""first""#)
            guard case .string(let id)? = reply.json?["name"] else { Issue.record("no push id"); return }
            #expect(id.utf8.count == 20)
            #expect(try await client.call(.get, "/users/ada/notes/\(id).json").body == #""first""#)
            reply = try await client.call(.patch, "/users/ada.json", #"{"born":1816,"langs/first":"Analytical"}"#)
            #expect(reply.body == #"{"born":1816,"langs/first":"Analytical"}"#)
            reply = try await client.call(.get, "/users/ada.json")
            #expect(reply.json?["born"] == .number(1816))
            #expect(reply.json?["name"] == .string("Ada"))
            #expect(reply.json?["langs"] == .object([(key: "first", value: .string("Analytical"))]))
            reply = try await client.call(.delete, "/users/ada.json")
            #expect(reply.status == .ok)
            #expect(reply.body == "null")
            #expect(try await client.call(.get, "/.json").body == "null")
        }
    }

    @Test func patchOnALeafReplacesItWithAnObject() async throws {
        try await TestServer().run { client, _ async throws in
            try await client.call(.put, "/p.json", #""""#)
            try await client.call(.patch, "/p.json", #"{"a":1,"b":null}"#)
            #expect(try await client.call(.get, "/p.json").body == #"{"a":1}"#)
            try await client.call(.patch, "/p.json", #"{"a":null}"#)
            #expect(try await client.call(.get, "/p.json").body == "null")
        }
    }

    @Test func printFormatShallowDownloadAndCallback() async throws {
        try await TestServer().run { client, _ async throws in
            try await client.call(.put, "/d.json", #"{"a":{"x":1},"b":{".value":2,".priority":5},"c":[1,2]}"#)
            #expect(try await client.call(.put, "/d/z.json?print=silent", "1").status == .noContent)
            #expect(try await client.call(.get, "/d/a.json?print=pretty").body == "{\n  \"x\" : 1\n}")
            // A push answers its name, written the same way as any object.
            let pushed = try await client.call(.post, "/pushed.json", "1")
            guard case .string(let name)? = pushed.json?["name"] else { Issue.record("no push id"); return }
            #expect(pushed.body == #"{"name":"\#(name)"}"#)
            let pretty = try await client.call(.post, "/pushed.json?print=pretty", "2")
            guard case .string(let prettyName)? = pretty.json?["name"] else { Issue.record("no push id"); return }
            #expect(pretty.body == "{\n  \"name\" : \"\(prettyName)\"\n}")
            #expect(try await client.call(.post, "/pushed.json?print=silent", "3").status == .noContent)
            guard case .object(let pushes)? = try await client.call(.get, "/pushed.json?shallow=true").json else {
                Issue.record("no pushes"); return
            }
            #expect(pushes.count == 3)
            #expect(try await client.call(.get, "/d.json?shallow=true").body == #"{"a":true,"b":true,"c":true,"z":true}"#)
            // Keys 0, 1, 2… stay keys: a shallow answer is an object (decision 0004), not [true,true].
            #expect(try await client.call(.get, "/d/c.json?shallow=true").body == #"{"0":true,"1":true}"#)
            try await client.call(.put, "/gaps.json", "[10,20,30,null,50]")
            #expect(try await client.call(.get, "/gaps.json?shallow=true").body == #"{"0":true,"1":true,"2":true,"4":true}"#)
            // What a query answers is an object too; arrays inside it stay arrays.
            let query = try await client.call(.get, #"/gaps.json?orderBy="$key"&limitToFirst=2"#)
            #expect(query.body == #"{"0":10,"1":20}"#, "\(query.body)")
            #expect(try await client.call(.get, "/d/b.json?format=export").body == #"{".value":2,".priority":5}"#)
            #expect(try await client.call(.get, "/d/c.json").body == "[1,2]")
            let download = try await client.call(.get, "/d/a.json?download=a.json")
            #expect(download.headers[.contentDisposition] == #"attachment; filename="a.json""#)
            let jsonp = try await client.call(.get, "/d/a.json?callback=handle")
            #expect(jsonp.body == #"handle({"x":1});"#)
            #expect(try await client.call(.get, "/d/b/.priority.json").body == "5")
            try await client.call(.put, "/d/a/.priority.json", #""pa""#)
            #expect(try await client.call(.get, "/d/a.json?format=export").body == #"{"x":1,".priority":"pa"}"#)
        }
    }

    @Test func methodOverrideTurnsAPostIntoAnotherMethod() async throws {
        try await TestServer().run { client, _ async throws in
            try await client.call(.post, "/m.json", "1", headers: .admin([RESTController.methodOverride: "PUT"]))
            #expect(try await client.call(.get, "/m.json").body == "1")
            try await client.call(.post, "/m.json?x-http-method-override=DELETE", nil)
            #expect(try await client.call(.get, "/m.json").body == "null")
        }
    }

    @Test func serverValuesResolveOnTheServer() async throws {
        let server = TestServer()
        try await server.run { client, _ async throws in
            // The server's clock stands still until the test advances it: timestamps are exact.
            let start = server.configuration.clock.wallMilliseconds
            let reply = try await client.call(.put, "/t.json", #"{"at":{".sv":"timestamp"},"n":{".sv":{"increment":5}}}"#)
            guard case .number(let at)? = reply.json?["at"] else { Issue.record("no timestamp"); return }
            #expect(at == start)
            await server.advance(by: .milliseconds(1500))
            #expect(try await client.call(.put, "/t/at.json", #"{".sv":"timestamp"}"#).json == .number(start + 1500))
            #expect(reply.json?["n"] == .number(5))
            try await client.call(.put, "/t/n.json", #"{".sv":{"increment":-7}}"#)
            #expect(try await client.call(.get, "/t/n.json").body == "-2")
            // An increment whose sum is past a double's range is refused, and the value stays (it was
            // stored as Infinity, which no JSON parser reads back).
            try await client.call(.put, "/t/n.json", "1e308")
            let overflow = try await client.call(.put, "/t/n.json", #"{".sv":{"increment":1e308}}"#)
            #expect(overflow.status == .badRequest)
            #expect(try await client.call(.get, "/t/n.json").body == "1e+308")
        }
    }

    @Test func concurrentIncrementsAreAtomic() async throws {
        try await TestServer().run { client, _ async throws in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<200 {
                    group.addTask { try await client.call(.put, "/counter.json", #"{".sv":{"increment":1}}"#) }
                }
                try await group.waitForAll()
            }
            #expect(try await client.call(.get, "/counter.json").body == "200")
        }
    }

    @Test func concurrentCompareAndSetLosesNoUpdate() async throws {
        try await TestServer().run { client, _ async throws in
            try await client.call(.put, "/cas.json", "0")
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<20 {
                    group.addTask {
                        for _ in 0..<5 {
                            // A REST transaction: read with ETag, write with if-match, retry on 412.
                            var current = try await client.call(.get, "/cas.json", headers: .admin([RESTController.firebaseETag: "true"]))
                            while true {
                                guard case .number(let n)? = current.json, let etag = current.etag else { return }
                                let attempt = try await client.call(.put, "/cas.json", JavaScriptNumber.format(n + 1), headers: .admin([.ifMatch: etag]))
                                if attempt.status == .ok { break }
                                #expect(attempt.status == .preconditionFailed)
                                current = attempt
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await client.call(.get, "/cas.json").body == "100")
        }
    }

    @Test func pathSegmentsArePercentDecodedThenRead() async throws {
        try await TestServer().run { client, _ async throws in
            try await client.call(.put, "/caf%C3%A9//x.json", "1")
            #expect(try await client.call(.get, "/café/x.json").body == "1")
            try await client.call(.put, "/caf%C3%A9/x/.priority.json", "3")
            #expect(try await client.call(.get, "/caf%C3%A9/x/%2Epriority.json").body == "3")
            // A decoded `.settings/rules` is the rules, as Firebase reads it.
            #expect(try await client.call(.get, "/%2Esettings/rules.json").body.contains(#""rules""#))
            // A decoded slash is part of a key, where it is refused; the message names the path without `.priority`.
            let reply = try await client.call(.get, "/a%2Fb/.priority.json")
            #expect(reply.status == .badRequest)
            #expect(reply.error?.hasPrefix(#"Invalid path "/a/b": Invalid key "a/b""#) == true)
        }
    }

    @Test func namespacesComeFromTheFirstHostLabel() {
        #expect(RESTController.namespaceLabel(host: "one.localhost:9000") == "one")
        #expect(RESTController.namespaceLabel(host: "my-db.firebaseio.com") == "my-db")
        #expect(RESTController.namespaceLabel(host: "127.0.0.1:9000") == nil)
        #expect(RESTController.namespaceLabel(host: "localhost:9000") == nil)
        // Empty labels do not count; an address is digits in every label; a name may start with digits.
        #expect(RESTController.namespaceLabel(host: ".one..localhost") == "one")
        #expect(RESTController.namespaceLabel(host: "one.") == nil)
        #expect(RESTController.namespaceLabel(host: "10.0.0.1") == nil)
        #expect(RESTController.namespaceLabel(host: "42.example") == "42")
        #expect(RESTController.namespaceLabel(host: "") == nil)
        #expect(RESTController.namespaceLabel(host: "[::1]:9000") == nil)
    }

    @Test func namespacesAreIndependentDatabases() async throws {
        try await TestServer().run { client, _ async throws in
            try await client.call(.put, "/x.json?ns=one", "1")
            try await client.call(.put, "/x.json?ns=two", "2")
            #expect(try await client.call(.get, "/x.json?ns=one").body == "1")
            #expect(try await client.call(.get, "/x.json?ns=two").body == "2")
            #expect(try await client.call(.get, "/x.json").body == "null")
            #expect(try await client.call(.get, "/x.json?ns=bad/name").status == .badRequest)
        }
    }
}
