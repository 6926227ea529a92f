/// `gs://bucket/path` split in two.
enum GSPath {
    static func parse(_ text: String) throws -> (bucket: String, name: String) {
        guard text.hasPrefix("gs://") else { throw CLIError("\(text): files on the server are named gs://bucket/path") }
        let rest = text.dropFirst(5)
        let parts = rest.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let bucket = parts.first, !bucket.isEmpty else { throw CLIError("\(text): missing the bucket (gs://<bucket>/path)") }
        return (String(bucket), parts.count > 1 ? String(parts[1]) : "")
    }
}
