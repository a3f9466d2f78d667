//! NumPy `.npy` (format 1.0) for 2-D float32 matrices (and int64 ones, for neighbour
//! indices): a streaming writer that does not need the row count up front (the header is
//! rewritten on finish) and a reader that memory-maps the file. Files read by
//! `numpy.load` and written by `numpy.save` both work.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use super::atomic::AtomicFile;
use crate::error::{LaseError, Result};

const MAGIC: &[u8] = b"\x93NUMPY";
/// Fixed header size of files lase writes: room for any row count, 64-byte aligned.
const WRITER_HEADER_LEN: usize = 128;

/// Element types lase writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Element {
    F32,
    I64,
}

impl Element {
    fn descr(self) -> &'static str {
        match self {
            Element::F32 => "<f4",
            Element::I64 => "<i8",
        }
    }

    fn size(self) -> usize {
        match self {
            Element::F32 => 4,
            Element::I64 => 8,
        }
    }
}

fn header_text_of(element: Element, rows: usize, cols: usize) -> String {
    format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': ({rows}, {cols}), }}",
        element.descr()
    )
}

#[cfg(test)]
fn header_text(rows: usize, cols: usize) -> String {
    header_text_of(Element::F32, rows, cols)
}

#[cfg(test)]
fn header_bytes(rows: usize, cols: usize) -> Vec<u8> {
    header_bytes_of(Element::F32, rows, cols)
}

fn header_bytes_of(element: Element, rows: usize, cols: usize) -> Vec<u8> {
    let dict = header_text_of(element, rows, cols);
    let mut out = Vec::with_capacity(WRITER_HEADER_LEN);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    let body_len = WRITER_HEADER_LEN - 10;
    out.extend_from_slice(&(body_len as u16).to_le_bytes());
    out.extend_from_slice(dict.as_bytes());
    out.resize(WRITER_HEADER_LEN - 1, b' ');
    out.push(b'\n');
    out
}

/// Streams rows of a float32 (or int64) matrix with `cols` columns into a `.npy` file.
pub struct NpyWriter {
    file: AtomicFile,
    cols: usize,
    rows: usize,
    element: Element,
}

impl NpyWriter {
    /// A writer of `cols`-wide rows; `cols` must be at least 1 (the row count is
    /// worked out from the values written, which a 0-wide matrix has none of).
    pub fn create(path: impl AsRef<Path>, cols: usize) -> Result<Self> {
        Self::create_of(path, cols, Element::F32)
    }

    /// A writer of int64 rows ([`Self::write_rows_i64`]).
    pub fn create_i64(path: impl AsRef<Path>, cols: usize) -> Result<Self> {
        Self::create_of(path, cols, Element::I64)
    }

    fn create_of(path: impl AsRef<Path>, cols: usize, element: Element) -> Result<Self> {
        if cols == 0 {
            return Err(LaseError::InvalidArgument(format!(
                "{}: a matrix written to .npy needs at least one column",
                path.as_ref().display()
            )));
        }
        let mut file = AtomicFile::create(path.as_ref())?;
        file.write_all(&header_bytes_of(element, 0, cols))
            .map_err(|e| LaseError::io(path.as_ref(), e))?;
        Ok(Self {
            file,
            cols,
            rows: 0,
            element,
        })
    }

    /// Appends rows given row-major; `values.len()` must be a multiple of `cols`.
    pub fn write_rows(&mut self, values: &[f32]) -> Result<()> {
        self.check_rows(values.len(), Element::F32)?;
        let mut bytes = Vec::with_capacity(values.len() * 4);
        for v in values {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        self.write_bytes(&bytes, values.len())
    }

    /// Appends int64 rows (a writer made by [`Self::create_i64`]).
    pub fn write_rows_i64(&mut self, values: &[i64]) -> Result<()> {
        self.check_rows(values.len(), Element::I64)?;
        let mut bytes = Vec::with_capacity(values.len() * 8);
        for v in values {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        self.write_bytes(&bytes, values.len())
    }

    fn check_rows(&self, values: usize, element: Element) -> Result<()> {
        if element != self.element {
            return Err(LaseError::InvalidArgument(format!(
                "{}: {:?} values written to a {:?} matrix",
                self.file.path().display(),
                element,
                self.element
            )));
        }
        if !values.is_multiple_of(self.cols) {
            return Err(LaseError::InvalidArgument(format!(
                "{} values is not a whole number of {}-wide rows",
                values, self.cols
            )));
        }
        Ok(())
    }

    fn write_bytes(&mut self, bytes: &[u8], values: usize) -> Result<()> {
        let path = self.file.path().to_path_buf();
        self.file
            .write_all(bytes)
            .map_err(|e| LaseError::io(&path, e))?;
        self.rows += values / self.cols;
        Ok(())
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Writes the final shape and moves the file into place.
    pub fn finish(mut self) -> Result<PathBuf> {
        let path = self.file.path().to_path_buf();
        let header = header_bytes_of(self.element, self.rows, self.cols);
        let w = self.file.writer();
        w.flush().map_err(|e| LaseError::io(&path, e))?;
        w.get_mut()
            .seek(SeekFrom::Start(0))
            .and_then(|_| w.get_mut().write_all(&header))
            .map_err(|e| LaseError::io(&path, e))?;
        self.file.commit()?;
        Ok(path)
    }
}

/// Writes a whole row-major matrix.
pub fn write_f32(path: impl AsRef<Path>, rows: usize, cols: usize, values: &[f32]) -> Result<()> {
    if values.len() != rows * cols {
        return Err(LaseError::InvalidArgument(format!(
            "{} values for a {rows} x {cols} matrix",
            values.len()
        )));
    }
    let mut w = NpyWriter::create(path, cols)?;
    w.write_rows(values)?;
    w.finish().map(|_| ())
}

/// Maps a 2-D `.npy` of `element` and checks its header against its size: (map, data
/// offset, rows, cols).
fn open_2d(path: &Path, element: Element) -> Result<(Mmap, usize, usize, usize)> {
    let file = File::open(path).map_err(|e| LaseError::io(path, e))?;
    // SAFETY: the map is read-only; lase never writes a file it has mapped.
    let mmap = unsafe { Mmap::map(&file) }.map_err(|e| LaseError::io(path, e))?;
    let what = match element {
        Element::F32 => "float32",
        Element::I64 => "int64",
    };
    let bad = |m: &str| LaseError::bad_file(path, format!("not a 2-D {what} .npy file: {m}"));
    if mmap.len() < 10 || &mmap[..6] != MAGIC {
        return Err(bad("missing \\x93NUMPY magic"));
    }
    let (header_len, start) = match mmap[6] {
        1 => (u16::from_le_bytes([mmap[8], mmap[9]]) as usize, 10),
        2 | 3 => {
            if mmap.len() < 12 {
                return Err(bad("truncated header"));
            }
            (
                u32::from_le_bytes([mmap[8], mmap[9], mmap[10], mmap[11]]) as usize,
                12,
            )
        }
        v => return Err(bad(&format!("unsupported format version {v}"))),
    };
    let offset = start + header_len;
    if mmap.len() < offset {
        return Err(bad("truncated header"));
    }
    let header =
        std::str::from_utf8(&mmap[start..offset]).map_err(|_| bad("header is not text"))?;
    let field = |key: &str| -> Option<&str> {
        let at = header.find(&format!("'{key}'"))? + key.len() + 2;
        let rest = header[at..].trim_start().strip_prefix(':')?.trim_start();
        Some(rest)
    };
    let descr = field("descr").ok_or_else(|| bad("no descr"))?;
    let accepted = match element {
        Element::F32 => descr.starts_with("'<f4'") || descr.starts_with("'float32'"),
        Element::I64 => descr.starts_with("'<i8'") || descr.starts_with("'int64'"),
    };
    if !accepted {
        return Err(bad(&format!(
            "dtype {} (expected '{}')",
            descr.split(',').next().unwrap_or(""),
            element.descr()
        )));
    }
    if field("fortran_order").is_some_and(|v| v.starts_with("True")) {
        return Err(bad("Fortran order"));
    }
    let shape = field("shape").ok_or_else(|| bad("no shape"))?;
    let inner = shape
        .strip_prefix('(')
        .and_then(|s| s.split(')').next())
        .ok_or_else(|| bad("unreadable shape"))?;
    let dims: Vec<usize> = inner
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().map_err(|_| bad("unreadable shape")))
        .collect::<Result<_>>()?;
    let [rows, cols] = dims[..] else {
        return Err(bad(&format!(
            "shape has {} dimensions, expected 2",
            dims.len()
        )));
    };
    // The shape comes from the file: a crafted one must not wrap the size check.
    let data_bytes = rows
        .checked_mul(cols)
        .and_then(|n| n.checked_mul(element.size()))
        .and_then(|n| n.checked_add(offset))
        .ok_or_else(|| {
            bad(&format!(
                "shape ({rows}, {cols}) overflows the address space"
            ))
        })?;
    if mmap.len() != data_bytes {
        return Err(bad(&format!(
            "{} data bytes for shape ({rows}, {cols})",
            mmap.len() - offset
        )));
    }
    Ok((mmap, offset, rows, cols))
}

/// A memory-mapped 2-D float32 `.npy` file (C order, little endian).
pub struct NpyMatrix {
    mmap: Mmap,
    offset: usize,
    pub rows: usize,
    pub cols: usize,
}

impl NpyMatrix {
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let (mmap, offset, rows, cols) = open_2d(path.as_ref(), Element::F32)?;
        Ok(Self {
            mmap,
            offset,
            rows,
            cols,
        })
    }

    /// Row-major values. The data start is 64-byte aligned in well-formed files; if it is
    /// not 4-byte aligned the values are copied.
    pub fn values(&self) -> std::borrow::Cow<'_, [f32]> {
        let bytes = &self.mmap[self.offset..];
        // SAFETY: f32 has no invalid bit patterns; alignment is checked by align_to.
        let (head, body, _) = unsafe { bytes.align_to::<f32>() };
        if head.is_empty() && cfg!(target_endian = "little") {
            std::borrow::Cow::Borrowed(body)
        } else {
            std::borrow::Cow::Owned(
                bytes
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
            )
        }
    }

    pub fn row(&self, i: usize) -> Vec<f32> {
        self.values()[i * self.cols..(i + 1) * self.cols].to_vec()
    }
}

/// A memory-mapped 2-D int64 `.npy` file (neighbour indices).
pub struct NpyIndexMatrix {
    mmap: Mmap,
    offset: usize,
    pub rows: usize,
    pub cols: usize,
}

impl NpyIndexMatrix {
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let (mmap, offset, rows, cols) = open_2d(path.as_ref(), Element::I64)?;
        Ok(Self {
            mmap,
            offset,
            rows,
            cols,
        })
    }

    /// Row-major values.
    pub fn values(&self) -> Vec<i64> {
        self.mmap[self.offset..]
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streamed_rows_read_back_with_final_shape() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.npy");
        let mut w = NpyWriter::create(&path, 3).unwrap();
        w.write_rows(&[1.0, 2.0, 3.0]).unwrap();
        w.write_rows(&[4.0, 5.0, 6.0, 7.0, 8.0, 9.5]).unwrap();
        assert!(w.write_rows(&[1.0]).is_err());
        w.finish().unwrap();
        let m = NpyMatrix::open(&path).unwrap();
        assert_eq!((m.rows, m.cols), (3, 3));
        assert_eq!(m.row(2), vec![7.0, 8.0, 9.5]);
        let raw = std::fs::read(&path).unwrap();
        assert_eq!(raw.len(), 128 + 9 * 4);
        assert_eq!(&raw[..6], MAGIC);
    }

    #[test]
    fn int64_rows_round_trip_and_are_not_read_as_float32() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("i.npy");
        let mut w = NpyWriter::create_i64(&path, 2).unwrap();
        w.write_rows_i64(&[0, -1, i64::MAX, 1 << 40]).unwrap();
        assert!(
            w.write_rows(&[1.0, 2.0]).is_err(),
            "f32 rows into an int64 file"
        );
        w.finish().unwrap();
        let m = NpyIndexMatrix::open(&path).unwrap();
        assert_eq!((m.rows, m.cols), (2, 2));
        assert_eq!(m.values(), vec![0, -1, i64::MAX, 1 << 40]);
        let e = NpyMatrix::open(&path).err().unwrap().to_string();
        assert!(e.contains("dtype") && e.contains("<f4"), "{e}");
        write_f32(dir.path().join("f.npy"), 1, 1, &[1.0]).unwrap();
        let e = NpyIndexMatrix::open(dir.path().join("f.npy"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("int64") && e.contains("<i8"), "{e}");
    }

    #[test]
    fn a_shape_whose_size_wraps_is_refused() {
        // 2^62 x 4 rows of 4 bytes is 2^66 bytes: wrapped to 64 bits it is 0, the size of
        // this file's (empty) data, so an unchecked product passes the size check.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wrap.npy");
        let mut raw = header_bytes(0, 4);
        let dict = header_text(1usize << 62, 4);
        raw[10..10 + dict.len()].copy_from_slice(dict.as_bytes());
        std::fs::write(&path, &raw).unwrap();
        let e = NpyMatrix::open(&path).err().unwrap().to_string();
        assert!(e.contains("wrap.npy") && e.contains("overflows"), "{e}");
    }

    #[test]
    fn rejects_wrong_dtype_and_truncation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.npy");
        write_f32(&path, 2, 2, &[1.0, 2.0, 3.0, 4.0]).unwrap();
        let mut raw = std::fs::read(&path).unwrap();
        raw.truncate(raw.len() - 4);
        std::fs::write(&path, &raw).unwrap();
        let e = NpyMatrix::open(&path).err().unwrap().to_string();
        assert!(e.contains("x.npy") && e.contains("data bytes"), "{e}");
        let at = raw.windows(3).position(|w| w == b"<f4").unwrap();
        raw[at..at + 3].copy_from_slice(b"<f8");
        std::fs::write(&path, &raw).unwrap();
        assert!(
            NpyMatrix::open(&path)
                .err()
                .unwrap()
                .to_string()
                .contains("dtype")
        );
    }
}
