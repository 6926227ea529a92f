import Foundation

/// The built-in functions: conversions, `math.*`, `timestamp.*`, `duration.*`, `latlng.value`, `path`, `debug`.
extension StorageRulesEvaluator {
    func builtin(_ name: String, _ arguments: [RuleValue]) throws(EvaluationError) -> RuleValue {
        let argument = arguments.first ?? .null
        switch name {
        case "int":
            switch argument {
            case .int: return argument
            case .float(let d):
                guard d.isFinite, let value = Int64(exactly: d.rounded(.towardZero)) else {
                    throw EvaluationError("int(): \(RuleValue.format(d)) does not fit in an int")
                }
                return .int(value)
            case .string(let s):
                guard let value = Int64(s) else { throw EvaluationError("int(): '\(s)' is not an integer") }
                return .int(value)
            default: throw EvaluationError("int() cannot convert \(argument.typeName)")
            }
        case "float":
            switch argument {
            case .int(let i): return .float(Double(i))
            case .float: return argument
            case .string(let s):
                guard let value = Double(s) else { throw EvaluationError("float(): '\(s)' is not a number") }
                return .float(value)
            default: throw EvaluationError("float() cannot convert \(argument.typeName)")
            }
        case "string":
            return .string(argument.text)
        case "bool":
            switch argument {
            case .bool: return argument
            case .string("true"): return .bool(true)
            case .string("false"): return .bool(false)
            default: throw EvaluationError("bool() cannot convert \(argument.literal)")
            }
        case "path":
            guard case .string(let s) = argument else { throw EvaluationError("path() takes a string") }
            var path = RulePath(parsing: s)
            path.absolute = true
            return .path(path)
        case "debug":
            return argument
        case "math.abs":
            switch argument {
            case .int(let i):
                guard i != .min else { throw EvaluationError("integer overflow") }
                return .int(abs(i))
            case .float(let d): return .float(abs(d))
            default: throw EvaluationError("math.abs() takes a number")
            }
        case "math.ceil", "math.floor", "math.round":
            let d = try number(argument, name)
            let rule: FloatingPointRoundingRule = name == "math.ceil" ? .up : (name == "math.floor" ? .down : .toNearestOrAwayFromZero)
            guard let value = Int64(exactly: d.rounded(rule)) else { throw EvaluationError("\(name)(): result does not fit in an int") }
            return .int(value)
        case "math.sqrt": return .float(try number(argument, name).squareRoot())
        case "math.pow": return .float(Foundation.pow(try number(argument, name), try number(arguments[1], name)))
        case "math.isInfinite": return .bool(try number(argument, name).isInfinite)
        case "math.isNaN": return .bool(try number(argument, name).isNaN)
        case "timestamp.date":
            return .timestamp(try RuleTimestamp.date(year: try int(arguments[0], name), month: try int(arguments[1], name), day: try int(arguments[2], name)))
        case "timestamp.value":
            return .timestamp(try RuleTimestamp.fromMillis(try int(argument, name)))
        case "duration.value":
            guard case .string(let unit) = arguments[1] else { throw EvaluationError("duration.value() takes a unit string such as 'h'") }
            return .duration(try RuleDuration.value(try int(argument, name), unit: unit))
        case "duration.time":
            var total = try RuleDuration(seconds: 0, nanos: try int(arguments[3], name))
            for (value, unit) in zip(arguments.prefix(3), ["h", "m", "s"]) {
                total = try total.adding(try RuleDuration.value(try int(value, name), unit: unit))
            }
            return .duration(total)
        case "duration.abs":
            guard case .duration(let d) = argument else { throw EvaluationError("duration.abs() takes a duration") }
            return .duration(d.isNegative ? try d.negated() : d)
        case "latlng.value":
            let latitude = try number(arguments[0], name)
            let longitude = try number(arguments[1], name)
            guard (-90...90).contains(latitude), (-180...180).contains(longitude) else {
                throw EvaluationError("latlng.value(): latitude must be within ±90 and longitude within ±180")
            }
            return .latlng(latitude: latitude, longitude: longitude)
        default:
            throw EvaluationError("unknown function \(name)")
        }
    }

    func number(_ value: RuleValue, _ name: String) throws(EvaluationError) -> Double {
        guard let d = value.doubleValue else { throw EvaluationError("\(name)() takes numbers, not \(value.typeName)") }
        return d
    }

    func int(_ value: RuleValue, _ name: String) throws(EvaluationError) -> Int64 {
        guard case .int(let i) = value else { throw EvaluationError("\(name)() takes ints, not \(value.typeName)") }
        return i
    }
}
