import Foundation

/// The memory this process holds, as the kernel counts it.
enum ProcessMemory {
    /// Resident bytes (RSS), or 0 where it cannot be read (then a ``MemoryLimit`` never triggers).
    static func residentBytes() -> Int {
        #if os(Linux)
        // statm: "size resident shared …", in pages.
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
        #else
        return 0
        #endif
    }
}
