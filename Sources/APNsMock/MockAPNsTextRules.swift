/// Small syntax checks and encoders for header values: hex tokens, UUIDs, base64, decimals.
///
/// Written on bytes, as they run for every request.
enum MockAPNsText {
    /// Lowercase or uppercase hex digits only.
    static func isHex(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            guard !bytes.isEmpty else { return false }
            for c in bytes where !isHexDigit(c) { return false }
            return true
        }
    }

    /// `8-4-4-4-12` hex digits (either case): the form APNs accepts for `apns-id` and `apns-request-id`.
    static func isUUID(_ text: String) -> Bool {
        let utf8 = text.utf8
        guard utf8.count == 36 else { return false }
        for (i, c) in utf8.enumerated() {
            if i == 8 || i == 13 || i == 18 || i == 23 {
                guard c == UInt8(ascii: "-") else { return false }
            } else if !isHexDigit(c) {
                return false
            }
        }
        return true
    }

    /// A non-negative decimal integer without sign or spaces, as `apns-expiration` and `apns-priority` are sent.
    static func decimal(_ text: String) -> Int64? {
        guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return nil
        }
        return Int64(text)
    }

    /// Standard base64 (RFC 4648 §4) with correct padding, as APNs encodes channel ids.
    static func isBase64(_ text: String) -> Bool {
        let utf8 = Array(text.utf8)
        guard !utf8.isEmpty, utf8.count % 4 == 0 else { return false }
        var padding = 0
        for (i, c) in utf8.enumerated() {
            if c == UInt8(ascii: "=") {
                guard i >= utf8.count - 2 else { return false }
                padding += 1
            } else {
                guard padding == 0, base64Value(c) != nil else { return false }
            }
        }
        return true
    }

    /// Decodes unpadded base64url (RFC 7515 §2), as used in JWTs; nil on any invalid character.
    static func base64URLDecode(_ text: Substring) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for c in text.utf8 {
            let v: UInt8
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): v = c - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): v = c - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): v = c - UInt8(ascii: "0") + 52
            case UInt8(ascii: "-"): v = 62
            case UInt8(ascii: "_"): v = 63
            default: return nil
            }
            accumulator = accumulator << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        // A single leftover character (6 bits) cannot encode a byte.
        guard bits < 6 else { return nil }
        return out
    }

    /// Standard padded base64 of `bytes`.
    static func base64(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var out: [UInt8] = []
        var i = 0
        while i < bytes.count {
            let n = min(3, bytes.count - i)
            let chunk = UInt32(bytes[i]) << 16 | (n > 1 ? UInt32(bytes[i + 1]) << 8 : 0) | (n > 2 ? UInt32(bytes[i + 2]) : 0)
            for k in 0..<4 {
                out.append(k <= n ? alphabet[Int(chunk >> UInt32(18 - 6 * k) & 63)] : UInt8(ascii: "="))
            }
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// A lowercase random (version 4) UUID string from 128 bits.
    static func uuid(_ high: UInt64, _ low: UInt64) -> String {
        let words = (high & 0xFFFF_FFFF_FFFF_0FFF | 0x4000, low & 0x3FFF_FFFF_FFFF_FFFF | 0x8000_0000_0000_0000)
        return String(unsafeUninitializedCapacity: 36) { buffer in
            hexDigits.withUnsafeBufferPointer { hex in
                var position = 0
                for byteIndex in 0..<16 {
                    if byteIndex == 4 || byteIndex == 6 || byteIndex == 8 || byteIndex == 10 {
                        buffer[position] = UInt8(ascii: "-")
                        position += 1
                    }
                    let word = byteIndex < 8 ? words.0 : words.1
                    let byte = Int(truncatingIfNeeded: word >> UInt64(56 - 8 * (byteIndex & 7))) & 0xFF
                    buffer[position] = hex[byte >> 4]
                    buffer[position + 1] = hex[byte & 0xF]
                    position += 2
                }
                return position
            }
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    private static func isHexDigit(_ c: UInt8) -> Bool {
        (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9")) || (c | 0x20 >= UInt8(ascii: "a") && c | 0x20 <= UInt8(ascii: "f"))
    }

    private static func base64Value(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): c - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): c - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): 62
        case UInt8(ascii: "/"): 63
        default: nil
        }
    }
}
