import HearthRules
@testable import HearthStorageRules
import Testing

/// Malformed rules files: every problem reported, each at its exact line and column.
@Suite struct DiagnosticTests {
    /// The diagnostics of a source that must be refused, as "line:column: message".
    func problems(_ source: String) -> [String] {
        do {
            _ = try StorageRules(source: source)
            Issue.record("expected the rules to be refused")
            return []
        } catch {
            return error.diagnostics.map(\.description)
        }
    }

    @Test func missingOperandAfterAMissingSemicolon() {
        // The first allow has no ';' before the next allow: allowed, as in Firebase.
        let source = """
            rules_version = '2';
            service firebase.storage {
              match /b/{bucket}/o {
                match /images/{uid} {
                  allow read: if request.auth != null
                  allow write: if request.auth.uid == uid &&;
                }
              }
            }
            """
        #expect(problems(source) == ["6:49: unexpected ';', expected an expression"])
    }

    @Test func unknownMethodsFunctionsAndArity() {
        let source = """
            service firebase.storage {
              match /b/{bucket}/o {
                allow reed, write: if true;
                allow get: if isOwner();
                function f(a, b) { return a + b; }
                allow list: if f(1);
              }
            }
            """
        #expect(problems(source) == [
            "3:11: unknown method 'reed' in allow; use read, write, get, list, create, update or delete",
            "4:19: unknown function 'isOwner'",
            "6:20: function 'f' takes 2 arguments, not 1",
        ])
    }

    @Test func missingClosingBracesNameTheirBlocks() {
        let source = """
            rules_version = '2';
            service firebase.storage {
              match /b/{bucket}/o {
                match /a/{x} {
                  allow read: if x == 'y';
              }

            """
        #expect(problems(source) == [
            "7:1: missing '}' to close the match block opened at 3:23",
            "7:1: missing '}' to close the service block opened at 2:26",
        ])
    }

    @Test func functionProblemsAndUnavailableFeatures() {
        let source = """
            rules_version = '2';
            service firebase.storage {
              function isSignedIn() {
                let uid = request.auth.uid;
              }
              function twice() { return true; }
              function twice() { return false; }
              match /b/{bucket}/o {
                match /{path=**} {
                  allow read: if twice() && nope == 1;
                  allow write: if firestore.get(/databases/x/documents/y).data.a == 1;
                }
              }
            }
            """
        #expect(problems(source) == [
            "5:3: function 'isSignedIn' must end with a return statement",
            "7:12: function 'twice' is already defined at 6:12",
            "10:33: unknown variable 'nope'",
            "11:23: firestore.* is not available in Hearth: Storage rules here cannot read Cloud Firestore documents",
        ])
    }

    @Test func malformedMatchPaths() {
        let source = """
            service firebase.storage {
              match /b/{bucket}/o {
                match /a/{x=**}/b {
                  allow read;
                }
                match /c/{y {
                  allow read;
                }
                match d {
                  allow read;
                }
                match /e/{z}/{z} {
                  allow read;
                }
              }
            }
            """
        #expect(problems(source) == [
            "3:5: in rules_version '1' a recursive wildcard must be the last segment; use rules_version = '2'",
            "6:16: expected '}' to end the wildcard {y",
            "9:11: expected a path starting with '/' after match",
            "12:18: the wildcard 'z' appears twice in this path",
        ])
    }

    @Test func firestoreRulesAreRecognized() {
        let source = """
            rules_version = '2';
            service cloud.firestore {
              match /databases/{database}/documents {
                allow read;
              }
            }
            """
        #expect(problems(source) == ["2:9: this is a Cloud Firestore rules file; Storage rules declare 'service firebase.storage'"])
    }

    @Test func severalStatementErrorsInOneFile() {
        let source = """
            rules_version = '3';
            service firebase.storage {
              allow read;
              match /b/{bucket}/o {
                allow delete: if 1;
                allow create: if request.resource.size < 'x' +;
                allow update: if request.time < duration.value(1, 'h'));
              }
            }
            extra
            """
        #expect(problems(source) == [
            "1:17: unsupported rules_version '3'; use '2' (or '1')",
            "3:3: allow statements must be inside a match block",
            "5:22: the condition of allow must be a boolean",
            "6:51: unexpected ';', expected an expression",
            "7:59: expected ';' after the condition, found ')'",
            "10:1: unexpected 'extra' after the service block",
        ])
    }

    @Test func emptyAndCommentOnlyFiles() {
        #expect(problems("") == ["1:1: the rules file is empty: expected 'service firebase.storage { … }'"])
        #expect(problems("// nothing here\n") == ["2:1: the rules file is empty: expected 'service firebase.storage { … }'"])
        #expect(problems("match /a { allow read; }") == ["1:1: expected 'service firebase.storage { … }'"])
    }

    @Test func tokenLevelErrors() {
        let source = """
            service firebase.storage {
              match /b/{bucket}/o {
                allow read: if 'abc;
                allow write: if request.auth.uid === 'x';
                allow get: if 1 is widget;
                allow list: if 99999999999999999999 > 1;
                /* never closed
            """
        #expect(problems(source) == [
            "3:20: unterminated string (strings end on the same line)",
            "4:38: use '==' and '!=' (there is no '===' in Storage rules)",
            "5:24: expected a type name after 'is' (string, int, float, number, bool, null, list, map, set, timestamp, duration, path, bytes, latlng, map_diff)",
            "6:20: integer literal out of range (ints are 64-bit; write a float such as 1e20)",
            "7:5: unterminated comment",
            "7:20: missing '}' to close the match block opened at 2:23",
            "7:20: missing '}' to close the service block opened at 1:26",
        ])
    }

    @Test func scopesOfFunctionsAndWildcards() {
        let source = """
            rules_version = '2';
            service firebase.storage {
              function top() { return uid == 'x'; }
              match /b/{bucket}/o {
                match /users/{uid} {
                  function mine() { return request.auth.uid == uid; }
                  allow read: if mine() && top();
                }
                match /other/{id} {
                  allow read: if mine() || uid == id;
                }
              }
            }
            """
        #expect(problems(source) == [
            "3:27: unknown variable 'uid'",
            "10:22: unknown function 'mine'",
            "10:32: unknown variable 'uid'",
        ])
    }

    @Test func functionBodies() {
        let source = """
            service firebase.storage {
              function a(x, x) { return x; }
              function b() { let y = 1; let y = 2; return y; }
              function c() { return 1; let z = 2; }
              function d() { if true; }
              function e(p) { let q = r; let r = p; return q; }
              match /b/{bucket}/o {
                allow read: if e(1) == 1 && e;
              }
            }
            """
        #expect(problems(source) == [
            "2:17: parameter 'x' appears twice",
            "3:33: 'y' is already defined in function 'b'",
            "4:28: nothing may follow the return statement of function 'c'",
            "5:18: expected 'let' or 'return' in the body of function 'd', found 'if'",
            "6:27: unknown variable 'r'",
            "8:33: 'e' is a function: call it, e(…)",
        ])
    }

    @Test func everyDiagnosticIsARulesError() {
        #expect(throws: RulesError.self) { try StorageRules(source: "service firebase.storage { match /b/{bucket}/o { allow read: if; } }") }
    }

    @Test func deepNestingIsRefusedNotACrash() {
        let deep = String(repeating: "(", count: 500) + "true" + String(repeating: ")", count: 500)
        let problems = problems("service firebase.storage { match /b/{bucket}/o { allow read: if \(deep); } }")
        #expect(problems.first?.hasSuffix("expression nested too deeply") == true)
    }

    @Test func longChainsAndDeepMatchesAreRefusedNotACrash() {
        // A left-leaning chain nests as deeply as parentheses do once parsed.
        let chain = Array(repeating: "1", count: 5000).joined(separator: " + ")
        #expect(problems("service firebase.storage { match /b/{bucket}/o { allow read: if \(chain) > 0; } }").first?
            .hasSuffix("expression nested too deeply") == true)
        let members = "request" + String(repeating: ".a", count: 5000)
        #expect(problems("service firebase.storage { match /b/{bucket}/o { allow read: if \(members); } }").first?
            .hasSuffix("expression nested too deeply") == true)
        let matches = String(repeating: "match /a { ", count: 60) + String(repeating: "} ", count: 60)
        #expect(problems("service firebase.storage { \(matches)}") == ["1:578: match blocks nested more than 50 deep"])
    }

    @Test func wellFormedRulesWithoutSemicolonsLoad() throws {
        let source = """
            rules_version = '2';
            service firebase.storage {
              match /b/{bucket}/o {
                function owns(uid) { return request.auth != null && request.auth.uid == uid }
                match /images/{uid}/{file=**} {
                  allow read
                  allow write: if owns(uid)
                }
              }
            }
            """
        _ = try StorageRules(source: source)
    }
}
