import Foundation
import HearthAccess
import HearthCore

/// The fields of an Identity Toolkit request, from a JSON body, a form body or a query string.
///
/// Keys are normalised to camelCase (`refresh_token` → `refreshToken`), as Firebase accepts both.
/// Values are read leniently where the SDKs rely on it: numbers where strings are expected
/// (`validSince`), a single string where a list is expected. Unknown fields are ignored.
struct IdentityRequestBody: Sendable {
    var fields: [String: JSONValue]

    init(fields: [String: JSONValue] = [:]) {
        self.fields = fields
    }

    /// A JSON object body; an empty body is an empty object.
    init(json bytes: [UInt8]) throws(IdentityError) {
        guard bytes.contains(where: { $0 != 0x20 && $0 != 0x0A && $0 != 0x0D && $0 != 0x09 }) else {
            self.init()
            return
        }
        let value: JSONValue
        do {
            value = try JSONValue(parsing: bytes)
        } catch {
            throw .malformedJSON("\(error)")
        }
        guard case .object(let members) = value else { throw .malformedJSON("The body is not a JSON object.") }
        var fields: [String: JSONValue] = [:]
        for (key, value) in members { fields[IdentityRequestBody.camelCase(key)] = value }
        self.init(fields: fields)
    }

    /// `application/x-www-form-urlencoded` pairs, or a query string.
    init(form text: String) {
        var fields: [String: JSONValue] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            // A malformed escape is kept as it came.
            func decode(_ part: Substring) -> String {
                PercentDecoding.decodeFormComponent(part) ?? PercentDecoding.plusAsSpace(part)
            }
            let key = IdentityRequestBody.camelCase(decode(parts[0]))
            fields[key] = .string(parts.count > 1 ? decode(parts[1]) : "")
        }
        self.init(fields: fields)
    }

    static func camelCase(_ key: String) -> String {
        guard key.contains("_") else { return key }
        var result = ""
        var upper = false
        for character in key {
            if character == "_" {
                upper = !result.isEmpty
                continue
            }
            result.append(upper ? Character(character.uppercased()) : character)
            upper = false
        }
        return result
    }

    func has(_ key: String) -> Bool {
        if let value = fields[key], value != .null { return true }
        return false
    }

    /// A string field; numbers and booleans are turned into their text, `null` into nil.
    func string(_ key: String) -> String? {
        switch fields[key] {
        case .string(let text)?: return text
        case .number(let number)?: return number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
        case .bool(let flag)?: return flag ? "true" : "false"
        default: return nil
        }
    }

    func bool(_ key: String) -> Bool? {
        switch fields[key] {
        case .bool(let flag)?: return flag
        case .string("true")?: return true
        case .string("false")?: return false
        default: return nil
        }
    }

    /// An enum field, by name or by its index in the schema's `cases` (the Android SDK sends
    /// `requestType: 6` for `EMAIL_SIGNIN`); an index out of range stays a number, to be refused as such.
    func enumeration(_ key: String, cases: [String]) -> String? {
        if case .number(let number)? = fields[key], let index = Int(exactly: number), cases.indices.contains(index) { return cases[index] }
        return string(key)
    }

    /// An integer field sent as a number or as a decimal string.
    func int64(_ key: String) -> Int64? {
        switch fields[key] {
        case .number(let number)?: return number.isFinite ? Int64(exactly: number.rounded(.down)) : nil
        case .string(let text)?: return Int64(text)
        default: return nil
        }
    }

    /// A list of strings; a single string counts as a list of one.
    func strings(_ key: String) -> [String] {
        switch fields[key] {
        case .string(let text)?: return [text]
        case .array(let items)?: return items.compactMap { if case .string(let text) = $0 { text } else { nil } }
        default: return []
        }
    }
}
