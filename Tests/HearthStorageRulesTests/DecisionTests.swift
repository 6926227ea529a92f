import Foundation
import HearthCore
import HearthStorageRules
import Testing

/// What a decision says: which allow granted it, or why nothing did.
@Suite struct DecisionTests {
    let ada: JSONValue = .object([(key: "uid", value: .string("ada")), (key: "token", value: .object([]))])

    func request(
        _ method: StorageRuleMethod, _ path: String, auth: JSONValue = .null,
        resource: StorageObjectFields? = nil, requestResource: StorageObjectFields? = nil
    ) -> StorageRuleRequest {
        StorageRuleRequest(method: method, bucket: "demo", path: path, auth: auth, time: 1_767_225_600, resource: resource, requestResource: requestResource)
    }

    let photos = """
        rules_version = '2';
        service firebase.storage {
          match /b/{bucket}/o {
            match /photos/{photoId} {
              allow read: if request.auth != null;
              allow update,
                    delete: if request.auth != null
                            && resource.metadata.owner == request.auth.uid;
            }
          }
        }
        """

    @Test func grantNamesTheAllowStatement() throws {
        let rules = try StorageRules(source: photos)
        let photo = StorageObjectFields(name: "photos/p1", bucket: "demo", size: 1, metadata: ["owner": "ada"])
        let read = rules.evaluate(request(.get, "photos/p1", auth: ada))
        #expect(read == StorageRuleDecision(
            allowed: true, grantedBy: StorageRuleGrant(line: 5, column: 7, text: "allow read: if request.auth != null;"), explanation: ""))
        // A statement over several lines is reported on one, from its `allow` keyword.
        let delete = rules.evaluate(request(.delete, "photos/p1", auth: ada, resource: photo))
        #expect(delete.allowed)
        #expect(delete.grantedBy == StorageRuleGrant(
            line: 6, column: 7, text: "allow update, delete: if request.auth != null && resource.metadata.owner == request.auth.uid;"))
        #expect(delete.grantedBy?.description == "6:7: allow update, delete: if request.auth != null && resource.metadata.owner == request.auth.uid;")
    }

    @Test func denialsExplainThemselves() throws {
        let rules = try StorageRules(source: photos)
        // No allow for the method at the path.
        #expect(rules.evaluate(request(.create, "photos/p1", auth: ada)).explanation == "no rule allows create on /b/demo/o/photos/p1")
        #expect(rules.evaluate(request(.get, "videos/v1", auth: ada)).explanation == "no rule allows get on /b/demo/o/videos/v1")
        // A condition that is false.
        let anonymous = rules.evaluate(request(.get, "photos/p1"))
        #expect(anonymous == StorageRuleDecision(allowed: false, grantedBy: nil, explanation: "5:7: condition is false"))
        // A condition that fails: its error, at the statement.
        #expect(rules.evaluate(request(.delete, "photos/p1", auth: ada)).explanation == "6:7: resource is null")
        let unowned = StorageObjectFields(name: "photos/p1", bucket: "demo")
        #expect(rules.evaluate(request(.delete, "photos/p1", auth: ada, resource: unowned)).explanation
            == "6:7: resource.metadata has no key 'owner'")
    }

    @Test func theFirstGrantInTheFileIsReportedAndTheLastFailureExplained() throws {
        let rules = try StorageRules(source: """
            rules_version = '2';
            service firebase.storage {
              match /b/{bucket}/o {
                match /{all=**} {
                  allow get: if request.auth.uid == 'root';
                }
                match /docs/{file} {
                  allow get: if file.size() > 100;
                  allow read: if file.matches('.*[.]md');
                  allow get: if true;
                }
              }
            }
            """)
        // Three statements could grant; the first true one in the file wins.
        #expect(rules.evaluate(request(.get, "docs/a.md")).grantedBy?.line == 9)
        #expect(rules.evaluate(request(.get, "docs/a.txt")).grantedBy?.line == 10)
        #expect(rules.evaluate(request(.get, "docs/a.txt", auth: .object([(key: "uid", value: .string("root"))]))).grantedBy?.line == 5)
        // Every condition tried fails: the explanation is the last one's.
        let list = rules.evaluate(request(.list, "docs/a.txt"))
        #expect(list == StorageRuleDecision(allowed: false, explanation: "9:7: condition is false"))
    }

    @Test func aConditionThatIsNotABooleanDenies() throws {
        let rules = try StorageRules(source: """
            service firebase.storage { match /b/{bucket}/o/{name} { allow read: if request.auth; } }
            """)
        #expect(rules.evaluate(request(.get, "x")).explanation == "1:57: condition is null, not bool")
        #expect(rules.evaluate(request(.get, "x", auth: ada)).explanation == "1:57: condition is map, not bool")
    }

    @Test func defaults() {
        let open = StorageRules.defaults(open: true)
        let closed = StorageRules.defaults(open: false)
        for method in StorageRuleMethod.allCases {
            for path in ["", "a", "a/b/c.png"] {
                #expect(open.evaluate(request(method, path)).allowed)
                #expect(!closed.evaluate(request(method, path)).allowed)
            }
        }
        #expect(open.source.contains("allow read, write: if true;"))
        #expect(closed.evaluate(request(.get, "a")).explanation == "5:7: condition is false")
    }

    @Test func requestVariables() throws {
        let rules = try StorageRules(source: """
            rules_version = '2';
            service firebase.storage {
              match /b/{bucket}/o/{path=**} {
                allow get: if request.path == /b/demo/o/a/b.txt && bucket == 'demo' && path == 'a/b.txt'
                  && request.method == 'get' && request.time == timestamp.value(1767225600500);
                allow list: if request.path == /b/demo/o && string(path) == '' && request.resource == null && resource == null;
                allow create: if request.auth.token.exp is int && request.auth.token.exp > 0 && request.resource.size == 3;
              }
            }
            """)
        let at = { (method: StorageRuleMethod, path: String) in
            StorageRuleRequest(method: method, bucket: "demo", path: path, time: 1_767_225_600.5)
        }
        #expect(rules.evaluate(at(.get, "a/b.txt")).allowed)
        #expect(rules.evaluate(at(.list, "")).allowed)
        var create = at(.create, "c")
        create.auth = .object([(key: "uid", value: .string("ada")), (key: "token", value: .object([(key: "exp", value: .number(1_767_229_200))]))])
        create.requestResource = StorageObjectFields(name: "c", bucket: "demo", size: 3)
        #expect(rules.evaluate(create).allowed)
    }

    @Test func functionsSeeTheWildcardsAroundTheirDeclaration() throws {
        let rules = try StorageRules(source: """
            rules_version = '2';
            service firebase.storage {
              match /b/{bucket}/o/{id} {
                function outerId() { return id; }
                match /{id} {
                  allow get: if outerId() == 'outer' && id == 'inner';
                }
              }
            }
            """)
        #expect(rules.evaluate(request(.get, "outer/inner")).allowed)
        #expect(!rules.evaluate(request(.get, "inner/outer")).allowed)
    }

    @Test func runawayRecursionIsCutShort() throws {
        let rules = try StorageRules(source: """
            service firebase.storage {
              function f(n) { return n > 0 && (f(n - 1) || f(n - 1)); }
              match /b/{bucket}/o/{name} {
                allow read: if f(19);
              }
            }
            """)
        let decision = rules.evaluate(request(.get, "x"))
        #expect(decision == StorageRuleDecision(allowed: false, explanation: "4:5: more than 10000 function calls"))
    }

    /// Twenty-one functions, each nesting 94 levels deep before calling the next: each part is within
    /// its limit, the whole is cut short before it can exhaust a thread's stack.
    @Test func deepEvaluationIsCutShort() throws {
        var functions = ""
        for i in 0..<21 {
            functions += "function f\(i)(x) { return \(String(repeating: "!", count: 94))\(i == 20 ? "x" : "f\(i + 1)(x)"); }\n"
        }
        let rules = try StorageRules(source: "service firebase.storage {\n\(functions)match /b/{bucket}/o/{n} { allow read: if f0(true); } }")
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var decision: StorageRuleDecision?
        let thread = Thread {
            decision = rules.evaluate(StorageRuleRequest(method: .get, bucket: "b", path: "x", time: 0))
            done.signal()
        }
        thread.stackSize = 4 << 20
        thread.start()
        done.wait()
        #expect(decision == StorageRuleDecision(allowed: false, explanation: "23:27: evaluation nested deeper than 300 levels"))
    }

    @Test func oddObjectNamesNeverCrash() throws {
        let rules = try StorageRules(source: """
            rules_version = '2';
            service firebase.storage {
              match /b/{bucket}/o {
                match /{a}/{b} { allow get: if a == '' && b == 'x'; }
                match /files/{name} { allow get: if name.size() == 3; }
              }
            }
            """)
        // Empty segments stay segments; names are whole Unicode characters.
        #expect(rules.evaluate(request(.get, "/x")).allowed)
        #expect(rules.evaluate(request(.get, "files/été")).allowed)
        #expect(!rules.evaluate(request(.get, "files/a//")).allowed)
        #expect(!rules.evaluate(request(.get, "files/" + String(repeating: "a/", count: 500))).allowed)
    }

    @Test func rulesAreSendableAndShareable() async throws {
        let rules = try StorageRules(source: photos)
        let results = await withTaskGroup(of: Bool.self) { group in
            for i in 0..<8 {
                group.addTask { rules.evaluate(StorageRuleRequest(method: .get, bucket: "b", path: "photos/\(i)", auth: .object([]), time: 0)).allowed }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results == Array(repeating: true, count: 8))
    }
}
