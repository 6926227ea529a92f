/// Finds the `allow` statements whose enclosing `match` blocks match a request path, with the wildcard
/// bindings of each way they match.
///
/// Every match block is tried against the start of the remaining segments; when it uses them all, its
/// allows apply, and its nested blocks are tried on whatever it leaves. A recursive wildcard
/// (`{rest=**}`) takes zero or more segments in rules version 2, one or more in version 1, binding a
/// path; a single wildcard (`{name}`) takes one segment, binding a string.
///
/// For example:
/// ```swift
/// // match /b/{bucket}/o { match /images/{file=**} { allow read; } }
/// let candidates = PathMatcher(version: "2").candidates(in: file.body, for: ["b", "demo", "o", "images", "a.png"])
/// // one candidate: the allow, with frames [["bucket": "demo"], ["file": images path "a.png"]]
/// ```
struct PathMatcher {
    let version: String

    /// An allow statement that applies, with one frame of wildcard bindings per enclosing match.
    struct Candidate {
        var allow: AllowStatement
        var frames: [[String: RuleValue]]
    }

    func candidates(in block: Block, for segments: [String]) -> [Candidate] {
        var found: [Candidate] = []
        collect(block, segments[...], frames: [], into: &found)
        // Source order, so the grant reported is the first that applies in the file.
        return found.enumerated().sorted { a, b in
            (a.element.allow.line, a.element.allow.column, a.offset) < (b.element.allow.line, b.element.allow.column, b.offset)
        }.map(\.element)
    }

    func collect(_ block: Block, _ remaining: ArraySlice<String>, frames: [[String: RuleValue]], into found: inout [Candidate]) {
        for match in block.matches {
            for (consumed, bindings) in prefixMatches(match.pattern, remaining) {
                let rest = remaining.dropFirst(consumed)
                let inner = frames + [bindings]
                if rest.isEmpty {
                    for allow in match.body.allows { found.append(Candidate(allow: allow, frames: inner)) }
                }
                collect(match.body, rest, frames: inner, into: &found)
            }
        }
    }

    /// Each way `pattern` matches a prefix of `segments`: how many segments it takes, and its bindings.
    func prefixMatches(_ pattern: [PathPatternSegment], _ segments: ArraySlice<String>) -> [(Int, [String: RuleValue])] {
        guard let recursive = pattern.firstIndex(where: { if case .recursive = $0 { true } else { false } }) else {
            guard pattern.count <= segments.count, let bindings = bind(pattern[...], segments.prefix(pattern.count)) else { return [] }
            return [(pattern.count, bindings)]
        }
        let before = pattern[..<recursive]
        let after = pattern[(recursive + 1)...]
        let fixed = before.count + after.count
        guard segments.count >= fixed, var bindings = bind(before, segments.prefix(before.count)) else { return [] }
        var results: [(Int, [String: RuleValue])] = []
        let least = version == "1" ? 1 : 0
        guard segments.count - fixed >= least else { return [] }
        for taken in least...(segments.count - fixed) {
            let middleStart = segments.startIndex + before.count
            let middle = segments[middleStart..<(middleStart + taken)]
            let tail = segments[(middleStart + taken)..<(middleStart + taken + after.count)]
            guard let tailBindings = bind(after, tail) else { continue }
            if case .recursive(let name) = pattern[recursive] {
                bindings[name] = .path(RulePath(segments: Array(middle), absolute: false))
            }
            results.append((fixed + taken, bindings.merging(tailBindings) { a, _ in a }))
        }
        return results
    }

    /// Bindings of literal and single-segment patterns against as many segments; nil if a literal differs.
    func bind(_ pattern: ArraySlice<PathPatternSegment>, _ segments: ArraySlice<String>) -> [String: RuleValue]? {
        var bindings: [String: RuleValue] = [:]
        for (part, segment) in zip(pattern, segments) {
            switch part {
            case .literal(let text): if !text.utf8.elementsEqual(segment.utf8) { return nil }
            case .single(let name): bindings[name] = .string(segment)
            case .recursive: return nil
            }
        }
        return bindings
    }
}
