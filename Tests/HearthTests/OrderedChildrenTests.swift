import Foundation
@testable import Hearth
import Testing

/// ``OrderedChildren`` against a reference model: random inserts, removals, value changes and moves,
/// turned into the child events a query raises (in Firebase's order: removed, added, moved, changed),
/// including children whose value does not convert (hidden). After every event the visible elements
/// match the model, and the deltas, applied in order to a copy, reproduce them.
@Suite struct OrderedChildrenTests {
    /// SplitMix64: a seeded generator, so a failure can be replayed.
    struct SeededGenerator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    struct Child: Equatable {
        var order: Int
        var payload: Int   // negative: does not convert (a typed array's decode failure)
    }

    /// The model: children sorted by (order, key), as a query orders by child then key.
    struct Model {
        var children: [String: Child] = [:] {
            didSet {
                sortedKeys = children.sorted { a, b in
                    a.value.order != b.value.order ? a.value.order < b.value.order : a.key < b.key
                }.map(\.key)
            }
        }
        /// The keys in query order, sorted once per change.
        private(set) var sortedKeys: [String] = []

        func previousKey(of key: String) -> String? {
            let keys = sortedKeys
            let index = keys.firstIndex(of: key)!
            return index == 0 ? nil : keys[index - 1]
        }

        var visible: [String] {
            sortedKeys.filter { children[$0]!.payload >= 0 }.map { "\($0)=\(children[$0]!.payload)" }
        }
    }

    static func element(_ key: String, _ child: Child) -> String? {
        child.payload >= 0 ? "\(key)=\(child.payload)" : nil
    }

    @Test(arguments: [1, 2, 3, 4]) func randomOperationsMatchTheModel(seed: UInt64) {
        var random = SeededGenerator(state: seed)
        var model = Model()
        var children = OrderedChildren<String>()
        var copy: [String] = []
        var changes = 0
        func check(_ change: SyncedArrayChange<String>?, _ step: Int) {
            if let change {
                change.apply(to: &copy)
                changes += 1
            }
            #expect(children.elements == model.visible, "step \(step)")
            #expect(copy == children.elements, "step \(step): the deltas do not reproduce the array \(String(describing: change))")
        }
        for step in 0..<3000 {
            let keys = model.sortedKeys
            let roll = Int.random(in: 0..<100, using: &random)
            let payload = Int.random(in: -1..<20, using: &random)   // about 1 in 21 does not convert
            if keys.isEmpty || roll < 35 {
                let key = "k\(Int.random(in: 0..<200, using: &random))"
                guard model.children[key] == nil else { continue }
                let child = Child(order: Int.random(in: 0..<50, using: &random), payload: payload)
                model.children[key] = child
                check(children.add(key, Self.element(key, child), after: model.previousKey(of: key)), step)
            } else if roll < 55 {
                let key = keys.randomElement(using: &random)!
                model.children.removeValue(forKey: key)
                check(children.remove(key), step)
            } else if roll < 75 {
                // The value changes, not the order.
                let key = keys.randomElement(using: &random)!
                model.children[key]!.payload = payload
                check(children.change(key, Self.element(key, model.children[key]!)), step)
            } else {
                // The order changes (and so the value): child_moved if its place changed, then child_changed.
                let key = keys.randomElement(using: &random)!
                let before = model.previousKey(of: key)
                model.children[key] = Child(order: Int.random(in: 0..<50, using: &random), payload: payload)
                let element = Self.element(key, model.children[key]!)
                let after = model.previousKey(of: key)
                if after != before || model.sortedKeys.firstIndex(of: key) != keys.firstIndex(of: key) {
                    check(children.move(key, element, after: after), step)
                }
                check(children.change(key, element), step)
            }
            #expect(children.count == model.visible.count)
        }
        #expect(changes > 2000)
    }

    @Test func changesNameTheirIndicesAndIndexPaths() {
        var children = OrderedChildren<String>()
        #expect(children.add("a", "A", after: nil) == .inserted("A", at: 0))
        #expect(children.add("c", "C", after: "a") == .inserted("C", at: 1))
        #expect(children.add("b", "B", after: "a") == .inserted("B", at: 1))
        #expect(children.change("b", "B2") == .updated("B2", at: 1))
        #expect(children.move("a", "A", after: "c") == .moved("A", from: 0, to: 2))
        #expect(children.elements == ["B2", "C", "A"])
        // A child that no longer converts leaves the visible array; one that converts again comes back.
        #expect(children.change("c", nil) == .removed("C", at: 1))
        #expect(children.elements == ["B2", "A"])
        #expect(children.add("d", "D", after: "c") == .inserted("D", at: 1))
        #expect(children.change("c", "C3") == .inserted("C3", at: 1))
        #expect(children.remove("b") == .removed("B2", at: 0))
        #expect(children.elements == ["C3", "D", "A"])
        #expect(SyncedArrayChange.moved("A", from: 0, to: 2).indexPaths(inSection: 1) == [[1, 0], [1, 2]])
    }
}
