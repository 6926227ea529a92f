import Foundation
import HearthRules

/// The methods of values: `name.matches('.*\\.png')`, `list.hasAny(['a'])`, `metadata.diff(old).affectedKeys()`.
extension StorageRulesEvaluator {
    func method(_ receiver: RuleValue, _ name: String, _ arguments: [RuleValue], _ receiverExpression: RuleExpression) throws(EvaluationError) -> RuleValue {
        switch receiver {
        case .string(let s): return try stringMethod(s, name, arguments)
        // A path answers string methods with its text (`file.matches('.*\\.png')` on a `{file=**}` wildcard).
        case .path(let p): return try stringMethod(p.text, name, arguments)
        case .list(let items): return try listMethod(items, name, arguments)
        case .set(let items): return try setMethod(items, name, arguments)
        case .map(let map): return try mapMethod(map, name, arguments)
        case .mapDiff(let new, let old): return try mapDiffMethod(new, old, name, arguments)
        case .timestamp(let t): return try timestampMethod(t, name, arguments)
        case .duration(let d):
            // Firebase splits a duration like protobuf: seconds and nanos share the sign.
            var seconds = d.seconds
            var nanos = Int64(d.nanos)
            if seconds < 0, nanos > 0 {
                seconds += 1
                nanos -= 1_000_000_000
            }
            switch name {
            case "seconds": return .int(seconds)
            case "nanos": return .int(nanos)
            default: break
            }
        case .latlng(let latitude, let longitude):
            switch (name, arguments.first) {
            case ("latitude", _): return .float(latitude)
            case ("longitude", _): return .float(longitude)
            case ("distance", .latlng(let otherLatitude, let otherLongitude)?):
                return .float(StorageRulesEvaluator.distance(latitude, longitude, otherLatitude, otherLongitude))
            default: break
            }
        case .bytes(let b):
            switch name {
            case "size": return .int(Int64(b.count))
            case "toBase64": return .string(Data(b).base64EncodedString())
            case "toHexString": return .string(b.map { String(format: "%02X", $0) }.joined())
            default: break
            }
        case .null: throw EvaluationError("\(describe(receiverExpression)) is null")
        default: break
        }
        throw EvaluationError("\(receiver.typeName) has no method \(name)()")
    }

    func stringMethod(_ s: String, _ name: String, _ arguments: [RuleValue]) throws(EvaluationError) -> RuleValue {
        switch name {
        case "size": return .int(Int64(s.unicodeScalars.count))
        case "lower": return .string(s.lowercased())
        case "upper": return .string(s.uppercased())
        case "trim": return .string(s.trimmingCharacters(in: .whitespacesAndNewlines))
        case "toUtf8": return .bytes(Array(s.utf8))
        case "matches":
            let regex = try StorageRulesEvaluator.regex(try string(arguments, 0, name), anchored: true)
            return .bool(regex.firstMatch(in: s, options: [], range: NSRange(s.startIndex..., in: s)) != nil)
        case "split":
            let regex = try StorageRulesEvaluator.regex(try string(arguments, 0, name), anchored: false)
            var parts: [RuleValue] = []
            var start = s.startIndex
            for match in regex.matches(in: s, options: [], range: NSRange(s.startIndex..., in: s)) {
                guard let range = Range(match.range, in: s), !range.isEmpty else { continue }
                parts.append(.string(String(s[start..<range.lowerBound])))
                start = range.upperBound
            }
            parts.append(.string(String(s[start...])))
            return .list(parts)
        case "replace":
            let regex = try StorageRulesEvaluator.regex(try string(arguments, 0, name), anchored: false)
            let template = try string(arguments, 1, name)
            return .string(regex.stringByReplacingMatches(in: s, options: [], range: NSRange(s.startIndex..., in: s), withTemplate: template))
        default: throw EvaluationError("string has no method \(name)()")
        }
    }

    func listMethod(_ items: [RuleValue], _ name: String, _ arguments: [RuleValue]) throws(EvaluationError) -> RuleValue {
        switch name {
        case "size": return .int(Int64(items.count))
        case "toSet": return .set(StorageRulesEvaluator.distinct(items))
        case "join":
            let separator = arguments.isEmpty ? "" : try string(arguments, 0, name)
            var parts: [String] = []
            for item in items {
                guard case .string(let s) = item else { throw EvaluationError("join() needs a list of strings, found \(item.typeName)") }
                parts.append(s)
            }
            return .string(parts.joined(separator: separator))
        case "concat":
            guard case .list(let other) = arguments[0] else { throw EvaluationError("concat() takes a list") }
            return .list(items + other)
        case "removeAll":
            let other = try collection(arguments[0], name)
            return .list(items.filter { item in !other.contains { RuleValue.equal($0, item) } })
        case "hasAll", "hasAny", "hasOnly":
            return try membership(items, name, arguments)
        default: throw EvaluationError("list has no method \(name)()")
        }
    }

    func setMethod(_ items: [RuleValue], _ name: String, _ arguments: [RuleValue]) throws(EvaluationError) -> RuleValue {
        switch name {
        case "size": return .int(Int64(items.count))
        case "hasAll", "hasAny", "hasOnly": return try membership(items, name, arguments)
        case "difference":
            let other = try collection(arguments[0], name)
            return .set(items.filter { item in !other.contains { RuleValue.equal($0, item) } })
        case "intersection":
            let other = try collection(arguments[0], name)
            return .set(items.filter { item in other.contains { RuleValue.equal($0, item) } })
        case "union": return .set(StorageRulesEvaluator.distinct(items + (try collection(arguments[0], name))))
        default: throw EvaluationError("set has no method \(name)()")
        }
    }

    /// `hasAll(x)`: every element of x is here; `hasAny(x)`: one is; `hasOnly(x)`: every element here is in x.
    func membership(_ items: [RuleValue], _ name: String, _ arguments: [RuleValue]) throws(EvaluationError) -> RuleValue {
        let other = try collection(arguments[0], name)
        func holds(_ collection: [RuleValue], _ element: RuleValue) -> Bool { collection.contains { RuleValue.equal($0, element) } }
        switch name {
        case "hasAll": return .bool(other.allSatisfy { holds(items, $0) })
        case "hasAny": return .bool(other.contains { holds(items, $0) })
        default: return .bool(items.allSatisfy { holds(other, $0) })
        }
    }

    func mapMethod(_ map: RuleMap, _ name: String, _ arguments: [RuleValue]) throws(EvaluationError) -> RuleValue {
        switch name {
        case "size": return .int(Int64(map.count))
        case "keys": return .list(map.keys.map(RuleValue.string))
        case "values": return .list(map.values)
        case "get":
            // The key is a string, or a list of strings naming a path through nested maps.
            let path: [String]
            switch arguments[0] {
            case .string(let key): path = [key]
            case .list(let keys):
                var names: [String] = []
                for key in keys {
                    guard case .string(let s) = key else { throw EvaluationError("get() takes a key or a list of string keys") }
                    names.append(s)
                }
                path = names
            default: throw EvaluationError("get() takes a key or a list of string keys")
            }
            var current = RuleValue.map(map)
            for key in path {
                guard case .map(let level) = current, let next = level[key] else { return arguments[1] }
                current = next
            }
            return current
        case "diff":
            guard case .map(let other) = arguments[0] else { throw EvaluationError("diff() takes a map, not \(arguments[0].typeName)") }
            return .mapDiff(map, other)
        default: throw EvaluationError("map has no method \(name)()")
        }
    }

    /// The diff of `new.diff(old)`: added keys are in new only, removed keys in old only.
    func mapDiffMethod(_ new: RuleMap, _ old: RuleMap, _ name: String, _ arguments: [RuleValue]) throws(EvaluationError) -> RuleValue {
        let added = new.keys.filter { old[$0] == nil }
        let removed = old.keys.filter { new[$0] == nil }
        let shared = new.keys.filter { old[$0] != nil }
        let changed = shared.filter { !RuleValue.equal(new[$0]!, old[$0]!) }
        let keys: [String]
        switch name {
        case "addedKeys": keys = added
        case "removedKeys": keys = removed
        case "changedKeys": keys = changed
        case "affectedKeys": keys = added + removed + changed
        case "unchangedKeys": keys = shared.filter { RuleValue.equal(new[$0]!, old[$0]!) }
        default: throw EvaluationError("map_diff has no method \(name)()")
        }
        return .set(keys.map(RuleValue.string))
    }

    func timestampMethod(_ t: RuleTimestamp, _ name: String, _ arguments: [RuleValue]) throws(EvaluationError) -> RuleValue {
        switch name {
        case "date": return .timestamp(try RuleTimestamp(seconds: t.days * 86_400, nanos: 0))
        case "year": return .int(t.civil.year)
        case "month": return .int(t.civil.month)
        case "day": return .int(t.civil.day)
        case "hours": return .int(t.hours)
        case "minutes": return .int(t.minutes)
        case "seconds": return .int(t.secondsOfMinute)
        case "nanos": return .int(Int64(t.nanos))
        case "dayOfWeek": return .int(t.dayOfWeek)
        case "dayOfYear": return .int(t.dayOfYear)
        case "time": return .duration(try RuleDuration(seconds: t.secondOfDay, nanos: Int64(t.nanos)))
        case "toMillis": return .int(t.millis)
        default: throw EvaluationError("timestamp has no method \(name)()")
        }
    }

    // MARK: Helpers

    func string(_ arguments: [RuleValue], _ index: Int, _ name: String) throws(EvaluationError) -> String {
        guard index < arguments.count, case .string(let s) = arguments[index] else {
            throw EvaluationError("\(name)() takes a string" + (index > 0 ? " as argument \(index + 1)" : ""))
        }
        return s
    }

    func collection(_ value: RuleValue, _ name: String) throws(EvaluationError) -> [RuleValue] {
        switch value {
        case .list(let items), .set(let items): return items
        default: throw EvaluationError("\(name)() takes a list or set, not \(value.typeName)")
        }
    }

    static func distinct(_ items: [RuleValue]) -> [RuleValue] {
        var out: [RuleValue] = []
        for item in items where !out.contains(where: { RuleValue.equal($0, item) }) { out.append(item) }
        return out
    }

    /// A regular expression for `matches()` (whole string), `split()` and `replace()`.
    ///
    /// Firebase uses RE2; ICU (NSRegularExpression) accepts a superset, which only matters for patterns
    /// Firebase would refuse. Where the two read a pattern differently (`\\d`, `\\w`, `$`), it is
    /// rewritten to mean what RE2 reads (``RulesRegex``).
    static func regex(_ pattern: String, anchored: Bool) throws(EvaluationError) -> NSRegularExpression {
        let icuPattern = RulesRegex.icuPattern(pattern)
        do {
            return try NSRegularExpression(pattern: anchored ? "\\A(?:\(icuPattern))\\z" : icuPattern)
        } catch {
            throw EvaluationError("invalid regular expression '\(pattern)'")
        }
    }

    /// Great-circle distance in meters (haversine, mean Earth radius).
    static func distance(_ lat1: Double, _ lng1: Double, _ lat2: Double, _ lng2: Double) -> Double {
        let radians = Double.pi / 180
        let dLat = (lat2 - lat1) * radians
        let dLng = (lng2 - lng1) * radians
        let a = sin(dLat / 2) * sin(dLat / 2) + cos(lat1 * radians) * cos(lat2 * radians) * sin(dLng / 2) * sin(dLng / 2)
        return 6_371_000 * 2 * atan2(a.squareRoot(), (1 - a).squareRoot())
    }
}
