import Foundation

/// A rules regular expression (the database's `matches(/…/)`, in JavaScript's syntax; Storage rules'
/// `matches()`, in RE2's), as the pattern ICU (`NSRegularExpression`) reads the same way.
///
/// The two differ where it matters for validation: ICU's `\d` and `\w` match any Unicode digit and
/// letter (`١٢٣٤`, `ñ`), JavaScript's only ASCII ones; and ICU's `$` also matches before a final line
/// break, JavaScript's only at the end. So `/^\d{4}$/` would accept `"١٢٣٤"` and `/^[a-z]+$/` would
/// accept `"abc\n"`, both of which Firebase refuses. RE2 (Storage rules) reads these as JavaScript does.
///
/// For example: `RulesRegex.icuPattern("^\\d+$")` is `^[0-9]+\z`.
package enum RulesRegex {
    package static func icuPattern(_ javaScript: String) -> String {
        // Scalars, not Characters: a bracket followed by a combining mark is still a bracket.
        let scalars = Array(javaScript.unicodeScalars)
        var result = String.UnicodeScalarView()
        var inClass = false
        var index = 0
        func append(_ text: String) { result.append(contentsOf: text.unicodeScalars) }
        while index < scalars.count {
            let scalar = scalars[index]
            if scalar == "\\", index + 1 < scalars.count {
                let escaped = scalars[index + 1]
                index += 2
                switch escaped {
                // Always a set of its own (inside a set, ICU's nested set, a union): as bare ranges inside
                // a set, a following `-` would make a range of the class's last character (`[\w-.]`).
                case "d": append("[0-9]")
                case "D": append("[^0-9]")
                case "w": append("[A-Za-z0-9_]")
                case "W": append("[^A-Za-z0-9_]")
                default:
                    result.append("\\")
                    result.append(escaped)
                }
                continue
            }
            if inClass {
                if scalar == "]" { inClass = false }
            } else if scalar == "[" {
                inClass = true
            } else if scalar == "$" {
                // Without the multi-line flag (which neither rules language has), `$` is the end of the
                // input. (The database rules' parser allows it only at the end of a pattern.)
                append("\\z")
                index += 1
                continue
            }
            result.append(scalar)
            index += 1
        }
        return String(result)
    }
}
