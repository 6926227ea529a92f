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
        let characters = Array(javaScript)
        var result = ""
        var inClass = false
        var index = 0
        while index < characters.count {
            let character = characters[index]
            if character == "\\", index + 1 < characters.count {
                let escaped = characters[index + 1]
                index += 2
                switch escaped {
                // Inside a set, a nested set (ICU's union) stands for the class.
                case "d": result += inClass ? "0-9" : "[0-9]"
                case "D": result += "[^0-9]"
                case "w": result += inClass ? "A-Za-z0-9_" : "[A-Za-z0-9_]"
                case "W": result += "[^A-Za-z0-9_]"
                default: result += "\\\(escaped)"
                }
                continue
            }
            if inClass {
                if character == "]" { inClass = false }
            } else if character == "[" {
                inClass = true
            } else if character == "$" {
                // Without the multi-line flag (which neither rules language has), `$` is the end of the
                // input. (The database rules' parser allows it only at the end of a pattern.)
                result += "\\z"
                index += 1
                continue
            }
            result.append(character)
            index += 1
        }
        return result
    }
}
