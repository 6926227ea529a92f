/// Rendezvous (highest random weight) hashing: which live node should own a database. Every node
/// computes the same answer from the same member list, and a node leaving moves only its own databases.
///
/// For example:
/// ```swift
/// let owner = RendezvousHash.preferred(for: "demo", among: ["a", "b", "c"])
/// ```
enum RendezvousHash {
    static func preferred(for database: String, among nodes: some Sequence<String>) -> String? {
        nodes.max { score(database, $0) < score(database, $1) }
    }

    /// FNV-1a over `node \0 database`, then a final mix: stable across processes and versions (unlike
    /// `Hasher`, which is seeded per process).
    static func score(_ database: String, _ node: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in node.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        hash = (hash ^ 0) &* 0x100_0000_01b3
        for byte in database.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        hash ^= hash >> 33
        hash &*= 0xff51_afd7_ed55_8ccd
        hash ^= hash >> 33
        return hash
    }
}
