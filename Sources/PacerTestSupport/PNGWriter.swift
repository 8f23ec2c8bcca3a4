/// Writes RGB pictures as PNG files with no library: the image data in stored (uncompressed)
/// deflate blocks, which every PNG reader takes. For pictures of emulated displays.
public enum PNGWriter {
    /// A PNG of `width`×`height` pixels, `pixel(x, y)` each.
    public static func png(width: Int, height: Int, pixel: (Int, Int) -> Pixel) -> [UInt8] {
        var raw: [UInt8] = []
        raw.reserveCapacity((width * 3 + 1) * height)
        for y in 0..<height {
            raw.append(0)  // filter: none
            for x in 0..<width {
                let p = pixel(x, y)
                raw += [p.red, p.green, p.blue]
            }
        }
        var header: [UInt8] = []
        header += bigEndian(UInt32(width)) + bigEndian(UInt32(height))
        header += [8, 2, 0, 0, 0]  // 8 bits, truecolour, deflate, no filter method, no interlace
        var out: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        out += chunk("IHDR", header)
        out += chunk("IDAT", zlibStored(raw))
        out += chunk("IEND", [])
        return out
    }

    /// The matrix drawn as round-ish LEDs of `scale` pixels on a dark board.
    public static func png(_ matrix: Matrix, scale: Int = 12) -> [UInt8] {
        let board = Pixel(12, 12, 12)
        return png(width: Matrix.width * scale, height: Matrix.height * scale) { x, y in
            let (cx, cy) = (x % scale, y % scale)
            let inset = max(1, scale / 8)
            // A square LED with its corners cut, one pixel of board around it.
            let inside = cx >= inset && cy >= inset && cx < scale - inset && cy < scale - inset
            let corner = (cx == inset || cx == scale - inset - 1) && (cy == inset || cy == scale - inset - 1)
            guard inside, !corner else { return board }
            let led = matrix[x / scale, y / scale]
            return led.isLit ? led : Pixel(28, 28, 28)
        }
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xff), UInt8((value >> 8) & 0xff), UInt8(value & 0xff)]
    }

    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let typed = Array(type.utf8) + data
        return bigEndian(UInt32(data.count)) + typed + bigEndian(crc32(typed))
    }

    /// A zlib stream of stored blocks (at most 65,535 bytes each).
    static func zlibStored(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let count = min(65_535, data.count - offset)
            let last: UInt8 = offset + count == data.count ? 1 : 0
            out.append(last)
            out += [UInt8(count & 0xff), UInt8(count >> 8), UInt8(~count & 0xff), UInt8((~count >> 8) & 0xff)]
            out += data[offset..<offset + count]
            offset += count
        } while offset < data.count
        return out + bigEndian(adler32(data))
    }

    static func adler32(_ data: [UInt8]) -> UInt32 {
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in data {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        return (b << 16) | a
    }

    static func crc32(_ data: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in data {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = (crc >> 1) ^ (0xEDB8_8320 & (0 &- (crc & 1))) }
        }
        return ~crc
    }
}
