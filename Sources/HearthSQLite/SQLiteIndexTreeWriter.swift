#if canImport(Glibc)
import Glibc
import HearthCore
#endif
import HearthStorage

/// Writes the rows of a two-column `WITHOUT ROWID` table (`path TEXT PRIMARY KEY, value TEXT`) straight
/// into a SQLite database file as a packed B-tree, from rows in strictly ascending key order: the bulk
/// load of `hearth import` (see `docs/decisions/0011-fast-import.md`).
///
/// SQLite stores a `WITHOUT ROWID` table as an index B-tree (https://www.sqlite.org/fileformat2.html):
/// every entry is a record `(path, value)`, kept exactly once — in a leaf, or as the separator key of
/// an interior cell. The tree is built bottom up, one page per level under construction; full pages
/// are appended to the file, so the load writes each byte once and sorts nothing.
///
/// The caller owns the file: SQLite must have created it (header, schema, an empty root page for the
/// table) and closed it; afterwards ``finish()`` writes the root over that page and the caller updates
/// the page count in the header (``finish()`` returns it).
///
/// For example:
/// ```swift
/// var writer = SQLiteIndexTreeWriter(descriptor: fd, pageSize: 4096, rootPage: 2, firstFreePage: 5)
/// try writer.add(key: keyBytes, value: valueBytes)
/// let pageCount = try writer.finish()
/// ```
struct SQLiteIndexTreeWriter {
    let descriptor: Int32
    let pageSize: Int
    /// The table's existing (empty) root page, overwritten with the root at the end.
    let rootPage: Int
    /// The next page number to hand out; pages are appended in this order.
    private(set) var nextPage: Int

    /// The page holding the byte at 1 GiB, which SQLite uses for file locks and never for data: a
    /// database over 1 GiB has a zero page there.
    let lockBytePage: Int
    static let lockByteOffset = 0x4000_0000

    /// Local payload bounds of index pages (the file format's X and M, with no reserved bytes).
    let maximumLocal: Int
    let minimumLocal: Int

    /// One level of the tree under construction (0: leaves).
    struct Level {
        /// The cells of the page being filled, back to back (interior cells start with their child).
        var content: [UInt8] = []
        var cellStarts: [Int] = []
        /// A full page waiting for one more entry: only then is `promoted` sure to have a right
        /// neighbour, so it can become the separator in the parent (see ``finish()``).
        var sealed: Sealed?
    }

    struct Sealed {
        var content: [UInt8]
        var cellStarts: [Int]
        /// The interior page's right-most child (unused for leaves).
        var rightChild: UInt32
        /// The entry (a cell without child pointer) that arrived when the page was full.
        var promoted: [UInt8]
    }

    private var levels: [Level] = [Level()]
    private var previousKey: [UInt8] = []
    private var hasPrevious = false
    private var payload: [UInt8] = []
    private var entry: [UInt8] = []
    /// Pages appended but not yet written, contiguous from `bufferFirstPage`.
    private var buffer: [UInt8] = []
    private var bufferFirstPage: Int
    private(set) var rowCount = 0

    init(descriptor: Int32, pageSize: Int, rootPage: Int, firstFreePage: Int) {
        self.descriptor = descriptor
        self.pageSize = pageSize
        self.rootPage = rootPage
        nextPage = firstFreePage
        bufferFirstPage = firstFreePage
        lockBytePage = Self.lockByteOffset / pageSize + 1
        maximumLocal = (pageSize - 12) * 64 / 255 - 23
        minimumLocal = (pageSize - 12) * 32 / 255 - 23
        buffer.reserveCapacity(Self.flushBytes + pageSize)
    }

    static let flushBytes = 4 << 20

    /// Adds one row; keys must be strictly ascending (byte order, as SQLite's BINARY collation).
    mutating func add(key: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) throws {
        if hasPrevious {
            let common = min(previousKey.count, key.count)
            let order = common == 0 ? 0 : memcmp(previousKey, key.baseAddress!, common)
            guard order < 0 || (order == 0 && previousKey.count < key.count) else {
                throw DatabaseStorageError(.corrupt, "Bulk load rows out of key order")
            }
        }
        previousKey.removeAll(keepingCapacity: true)
        previousKey.append(contentsOf: key)
        hasPrevious = true
        rowCount += 1
        try makeEntry(key: key, value: value)
        // A copy of the reused buffer (a reference, not the bytes): it stays unique, so the next row
        // reuses its storage, unless a page kept it as its promoted entry.
        let entry = self.entry
        try push(entry, child: 0, level: 0)
    }

    /// Writes the remaining pages and the root; returns the number of pages in the file.
    mutating func finish() throws -> Int {
        var rightChild: UInt32 = 0
        var level = 0
        while level < levels.count {
            let isLeaf = level == 0
            if let sealed = levels[level].sealed {
                // Nothing followed the promoted entry: the sealed page gives up its last cell as the
                // separator, and the promoted entry opens the last page of this level.
                levels[level].sealed = nil
                var content = sealed.content
                var starts = sealed.cellStarts
                let lastStart = starts.removeLast()
                var last = Array(content[lastStart...])
                content.removeSubrange(lastStart...)
                var sealedRight: UInt32 = 0
                if !isLeaf {
                    sealedRight = Self.readUInt32(last, 0)
                    last.removeFirst(4)
                }
                let page = try appendPage(Self.page(leaf: isLeaf, content: content, cellStarts: starts, rightChild: sealedRight, size: pageSize))
                try push(last, child: page, level: level + 1)
                let cell = isLeaf ? sealed.promoted : Self.bytes(sealed.rightChild) + sealed.promoted
                levels[level].content = cell
                levels[level].cellStarts = [0]
            }
            let current = levels[level]
            let image = Self.page(leaf: isLeaf, content: current.content, cellStarts: current.cellStarts, rightChild: rightChild, size: pageSize)
            if level + 1 < levels.count {
                rightChild = try appendPage(image)
            } else {
                try flush()
                try write(image, at: rootPage)
            }
            level += 1
        }
        try flush()
        return nextPage - 1
    }

    /// Adds an entry (with the left child for interior levels) to a level, sealing full pages.
    private mutating func push(_ entry: [UInt8], child: UInt32, level: Int) throws {
        if level == levels.count { levels.append(Level()) }
        let isLeaf = level == 0
        if let sealed = levels[level].sealed {
            levels[level].sealed = nil
            let page = try appendPage(
                Self.page(leaf: isLeaf, content: sealed.content, cellStarts: sealed.cellStarts, rightChild: sealed.rightChild, size: pageSize)
            )
            try push(sealed.promoted, child: page, level: level + 1)
        }
        let cellSize = entry.count + (isLeaf ? 0 : 4)
        let header = isLeaf ? 8 : 12
        let used = header + 2 * (levels[level].cellStarts.count + 1) + levels[level].content.count + cellSize
        if used <= pageSize {
            levels[level].cellStarts.append(levels[level].content.count)
            if !isLeaf { levels[level].content.append(contentsOf: Self.bytes(child)) }
            levels[level].content.append(contentsOf: entry)
            return
        }
        levels[level].sealed = Sealed(content: levels[level].content, cellStarts: levels[level].cellStarts, rightChild: child, promoted: entry)
        levels[level].content = []
        levels[level].content.reserveCapacity(pageSize)
        levels[level].cellStarts = []
    }

    /// The cell of a row without child pointer: payload size, the local part of the record, and the
    /// first overflow page when the record does not fit.
    private mutating func makeEntry(key: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) throws {
        let keyType = UInt64(key.count) * 2 + 13
        let valueType = UInt64(value.count) * 2 + 13
        // The record header (its own size, then the two column types) is under 128 bytes: one-byte size.
        let headerSize = 1 + Self.varintLength(keyType) + Self.varintLength(valueType)
        let total = headerSize + key.count + value.count
        entry.removeAll(keepingCapacity: true)
        Self.appendVarint(UInt64(total), to: &entry)
        if total <= maximumLocal {
            entry.append(UInt8(headerSize))
            Self.appendVarint(keyType, to: &entry)
            Self.appendVarint(valueType, to: &entry)
            entry.append(contentsOf: key)
            entry.append(contentsOf: value)
            return
        }
        payload.removeAll(keepingCapacity: true)
        payload.append(UInt8(headerSize))
        Self.appendVarint(keyType, to: &payload)
        Self.appendVarint(valueType, to: &payload)
        payload.append(contentsOf: key)
        payload.append(contentsOf: value)
        let k = minimumLocal + (total - minimumLocal) % (pageSize - 4)
        let local = k <= maximumLocal ? k : minimumLocal
        entry.append(contentsOf: payload[0..<local])
        // Overflow pages are appended in order, each pointing at the next (0 ends the chain).
        let first = upcomingPage
        var offset = local
        var image = [UInt8](repeating: 0, count: pageSize)
        while offset < total {
            let chunk = min(pageSize - 4, total - offset)
            let next = offset + chunk < total ? UInt32(page(after: upcomingPage)) : 0
            image.withUnsafeMutableBytes { page in
                page.storeBytes(of: next.bigEndian, toByteOffset: 0, as: UInt32.self)
                payload.withUnsafeBytes { source in
                    page.baseAddress!.advanced(by: 4).copyMemory(from: source.baseAddress!.advanced(by: offset), byteCount: chunk)
                }
                if chunk < pageSize - 4 {
                    (page.baseAddress! + 4 + chunk).initializeMemory(as: UInt8.self, repeating: 0, count: pageSize - 4 - chunk)
                }
            }
            _ = try appendPage(image)
            offset += chunk
        }
        entry.append(contentsOf: Self.bytes(UInt32(first)))
    }

    /// A B-tree page: header, cell pointers in key order, cells packed at the end of the page.
    static func page(leaf: Bool, content: [UInt8], cellStarts: [Int], rightChild: UInt32, size: Int) -> [UInt8] {
        var image = [UInt8](repeating: 0, count: size)
        let contentStart = size - content.count
        let count = cellStarts.count
        image[0] = leaf ? 0x0A : 0x02
        image[3] = UInt8(count >> 8)
        image[4] = UInt8(count & 0xFF)
        // 65536 is written as 0, as the format says.
        image[5] = UInt8((contentStart >> 8) & 0xFF)
        image[6] = UInt8(contentStart & 0xFF)
        var pointer = 8
        if !leaf {
            image[8] = UInt8(rightChild >> 24)
            image[9] = UInt8((rightChild >> 16) & 0xFF)
            image[10] = UInt8((rightChild >> 8) & 0xFF)
            image[11] = UInt8(rightChild & 0xFF)
            pointer = 12
        }
        for start in cellStarts {
            let offset = contentStart + start
            image[pointer] = UInt8(offset >> 8)
            image[pointer + 1] = UInt8(offset & 0xFF)
            pointer += 2
        }
        image.replaceSubrange(contentStart..<size, with: content)
        return image
    }

    /// Appends a page at the next page number (buffered) and returns that number.
    private mutating func appendPage(_ image: [UInt8]) throws -> UInt32 {
        if nextPage == lockBytePage {
            buffer.append(contentsOf: repeatElement(0, count: pageSize))
            nextPage += 1
        }
        let number = nextPage
        nextPage += 1
        buffer.append(contentsOf: image)
        if buffer.count >= Self.flushBytes { try flush() }
        return UInt32(number)
    }

    /// The number the next appended page gets.
    var upcomingPage: Int { nextPage == lockBytePage ? nextPage + 1 : nextPage }

    func page(after page: Int) -> Int {
        page + 1 == lockBytePage ? page + 2 : page + 1
    }

    private mutating func flush() throws {
        guard !buffer.isEmpty else { return }
        try write(buffer, at: bufferFirstPage)
        bufferFirstPage += buffer.count / pageSize
        buffer.removeAll(keepingCapacity: true)
    }

    private func write(_ bytes: [UInt8], at page: Int) throws {
        var written = 0
        while written < bytes.count {
            let result = bytes.withUnsafeBytes { raw in
                pwrite(descriptor, raw.baseAddress! + written, raw.count - written, off_t((page - 1) * pageSize + written))
            }
            if result < 0 {
                if errno == EINTR { continue }
                throw DatabaseStorageError(.unavailable, "Cannot write the imported database: \(String(cString: strerror(errno)))")
            }
            written += result
        }
    }

    static func bytes(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }

    static func readUInt32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
    }

    /// SQLite's big-endian varint, for values below 2^56 (7 bits a byte, high bit: more follows).
    static func appendVarint(_ value: UInt64, to bytes: inout [UInt8]) {
        let length = varintLength(value)
        for index in stride(from: length - 1, through: 0, by: -1) {
            let group = UInt8((value >> (7 * UInt64(index))) & 0x7F)
            bytes.append(index == 0 ? group : group | 0x80)
        }
    }

    static func varintLength(_ value: UInt64) -> Int {
        var length = 1
        var rest = value >> 7
        while rest != 0 {
            length += 1
            rest >>= 7
        }
        return length
    }
}
