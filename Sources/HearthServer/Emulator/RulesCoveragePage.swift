import HearthCore
import HearthRules

/// The rules coverage as a page (`/.inspect/coverage?ns=…`): the rules' source as written, each rule's
/// value marked by what it answered — allowed only, both, refused only, or never evaluated — with its
/// counts on hover, then a table of every rule for reading and for keyboards. Plain HTML in Hearth's
/// look (`/ui/hearth-ui.css`, `/ui/coverage.css`), no script.
///
/// For example:
/// ```swift
/// let html = RulesCoveragePage.html(coverage.report(of: rules), namespace: "demo")
/// ```
enum RulesCoveragePage {
    /// What a rule answered, as the page marks it.
    enum Mark: String {
        case allowed, mixed, denied, never

        init(_ counts: RulesCoverageReport.Counts) {
            switch (counts.allowed > 0, counts.denied > 0) {
            case (true, false): self = .allowed
            case (true, true): self = .mixed
            case (false, true): self = .denied
            case (false, false): self = .never
            }
        }

        var label: String {
            switch self {
            case .allowed: "allowed"
            case .mixed: "allowed and refused"
            case .denied: "only refused"
            case .never: "never evaluated"
            }
        }
    }

    static func html(_ report: RulesCoverageReport, namespace: String) -> String {
        let marks = report.rules.map { Mark($0.counts) }
        let evaluated = marks.filter { $0 != .never }.count
        let refusedOnly = marks.filter { $0 == .denied }.count
        var out = """
            <!doctype html>
            <html lang="en">
            <head>
              <meta charset="utf-8">
              <meta name="viewport" content="width=device-width, initial-scale=1">
              <title>Rules coverage · \(escape(namespace)) · Hearth</title>
              <link rel="icon" href="/ui/favicon.svg">
              <link rel="stylesheet" href="/ui/hearth-ui.css">
              <link rel="stylesheet" href="/ui/coverage.css">
            </head>
            <body>
            <main class="page">
              <div class="page-head"><div>
                <h1>Rules coverage</h1>
                <p>Database <strong>\(escape(namespace))</strong>: \(report.rules.count) rules, \(evaluated) evaluated\
            \(refusedOnly > 0 ? " (\(refusedOnly) only refused)" : ""), \(report.rules.count - evaluated) never, \
            since these rules were put in force or the server started.</p>
              </div><a class="button small" href="coverage.json?ns=\(escape(PercentEncoding.component(namespace)))">As JSON</a></div>
              <p class="legend">\(([Mark.allowed, .mixed, .denied, .never]).map { "<span class=\"rule \($0.rawValue)\">\($0.label)</span>" }.joined(separator: " "))</p>
              <pre class="card source" tabindex="0" aria-label="The rules, each rule marked">
            """
        // The source as written, each rule's value wrapped: offsets are bytes of the source (comments
        // blanked keep them), values never overlap, and the report lists them in source order.
        let bytes = Array(report.source.utf8)
        var position = 0
        for (rule, mark) in zip(report.rules, marks) where rule.start >= position && rule.end <= bytes.count {
            out += escape(String(decoding: bytes[position..<rule.start], as: UTF8.self))
            let title = "\(rule.rule): \(counted(rule.counts))"
            out += "<span class=\"rule \(mark.rawValue)\" title=\"\(escape(title))\">"
            out += escape(String(decoding: bytes[rule.start..<rule.end], as: UTF8.self)) + "</span>"
            position = rule.end
        }
        out += escape(String(decoding: bytes[position...], as: UTF8.self))
        out += """
            </pre>
              <div class="card table-scroll" tabindex="0" role="region" aria-label="Every rule and its counts"><table>
                <thead><tr><th scope="col">Rule</th><th scope="col">Line</th><th scope="col">Evaluated</th><th scope="col">Allowed</th><th scope="col">Refused</th></tr></thead>
                <tbody>

            """
        for (rule, mark) in zip(report.rules, marks) {
            out += """
                    <tr class="\(mark.rawValue)"><th scope="row"><code>\(escape(rule.rule))</code><br><code class="expression">\(escape(rule.expression))</code></th>\
                <td>\(rule.line)</td><td>\(rule.counts.evaluations)</td><td>\(rule.counts.allowed)</td><td>\(rule.counts.denied)</td></tr>

                """
        }
        out += """
                </tbody>
              </table></div>
            </main>
            </body>
            </html>

            """
        return out
    }

    static func counted(_ counts: RulesCoverageReport.Counts) -> String {
        guard counts.evaluations > 0 else { return "never evaluated" }
        return "evaluated \(counts.evaluations) \(counts.evaluations == 1 ? "time" : "times"): \(counts.allowed) allowed, \(counts.denied) refused"
    }

    /// `text` for HTML text and quoted attributes. By Unicode scalars: a `"` followed by a combining
    /// mark is one `Character`, and would not match `"` (rule keys may hold both).
    static func escape(_ text: String) -> String {
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out.append(contentsOf: "&amp;".unicodeScalars)
            case "<": out.append(contentsOf: "&lt;".unicodeScalars)
            case ">": out.append(contentsOf: "&gt;".unicodeScalars)
            case "\"": out.append(contentsOf: "&quot;".unicodeScalars)
            case "'": out.append(contentsOf: "&#39;".unicodeScalars)
            default: out.append(scalar)
            }
        }
        return String(out)
    }

}
