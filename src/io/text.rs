//! Streaming line readers for text corpora: plain or gzip (detected from the magic
//! bytes, not the name), LF or CRLF, one sentence per line. Invalid UTF-8 is an error
//! that names the file and the 1-based line; empty lines are kept so that line numbers
//! stay aligned with any parallel file.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use flate2::read::MultiGzDecoder;

use crate::error::{LaseError, Result};

/// Counts bytes read from the underlying (possibly compressed) file, for progress.
struct CountingReader<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Iterates the lines of a text file as `Result<String>`.
pub struct LineReader {
    path: PathBuf,
    reader: Box<dyn BufRead + Send>,
    line: usize,
    buf: Vec<u8>,
    bytes_read: Arc<AtomicU64>,
    total_bytes: Option<u64>,
}

impl LineReader {
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        let mut file = File::open(&path).map_err(|e| LaseError::io(&path, e))?;
        // A pipe has no size to measure progress against.
        let total_bytes = file
            .metadata()
            .ok()
            .filter(std::fs::Metadata::is_file)
            .map(|m| m.len());
        let mut magic = [0u8; 2];
        let n = read_up_to(&mut file, &mut magic).map_err(|e| LaseError::io(&path, e))?;
        // The sniffed bytes go back in front of the stream rather than the path being
        // opened again: a pipe (`<(zcat ...)`, /dev/stdin) cannot be read twice.
        let bytes_read = Arc::new(AtomicU64::new(0));
        let counted = CountingReader {
            inner: std::io::Cursor::new(magic[..n].to_vec()).chain(file),
            count: bytes_read.clone(),
        };
        let reader: Box<dyn BufRead + Send> = if n == 2 && magic == [0x1f, 0x8b] {
            Box::new(BufReader::with_capacity(
                1 << 16,
                MultiGzDecoder::new(counted),
            ))
        } else {
            Box::new(BufReader::with_capacity(1 << 16, counted))
        };
        Ok(Self {
            path,
            reader,
            line: 0,
            buf: Vec::new(),
            bytes_read,
            total_bytes,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Number of lines returned so far (the 1-based number of the last one).
    pub fn line_number(&self) -> usize {
        self.line
    }

    /// Bytes of the file on disk consumed so far, and the file's size (None for a pipe).
    pub fn progress(&self) -> (u64, Option<u64>) {
        (self.bytes_read.load(Ordering::Relaxed), self.total_bytes)
    }

    /// Reads up to `n` lines.
    pub fn next_chunk(&mut self, n: usize) -> Result<Vec<String>> {
        let mut out = Vec::with_capacity(n);
        for line in self.by_ref().take(n) {
            out.push(line?);
        }
        Ok(out)
    }
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match r.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

impl Iterator for LineReader {
    type Item = Result<String>;

    fn next(&mut self) -> Option<Self::Item> {
        self.buf.clear();
        match self.reader.read_until(b'\n', &mut self.buf) {
            Ok(0) => None,
            Ok(_) => {
                self.line += 1;
                if self.buf.last() == Some(&b'\n') {
                    self.buf.pop();
                    if self.buf.last() == Some(&b'\r') {
                        self.buf.pop();
                    }
                }
                Some(match std::str::from_utf8(&self.buf) {
                    Ok(s) => Ok(s.to_owned()),
                    Err(e) => Err(invalid_utf8(&self.path, self.line, e.valid_up_to())),
                })
            }
            Err(e) => Some(Err(LaseError::bad_line(
                &self.path,
                self.line + 1,
                e.to_string(),
            ))),
        }
    }
}

/// Reads a whole (small) UTF-8 file: a config, a recipe, a tokenizer, a manifest. Invalid
/// UTF-8 is an error naming the file, the line and the byte within it, as the line
/// readers' errors do.
pub fn read_text(path: impl AsRef<Path>) -> Result<String> {
    let path = path.as_ref();
    let bytes = std::fs::read(path).map_err(|e| LaseError::io(path, e))?;
    String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = valid.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        invalid_utf8(path, line, valid.len() - line_start)
    })
}

/// The error for invalid UTF-8 at byte `byte` (0-based) of line `line` of `path`.
fn invalid_utf8(path: &Path, line: usize, byte: usize) -> LaseError {
    LaseError::bad_line(
        path,
        line,
        format!("invalid UTF-8 at byte {byte} of the line"),
    )
}

/// Reads every line of a file (for small files: test sets, fixtures).
pub fn read_lines(path: impl AsRef<Path>) -> Result<Vec<String>> {
    LineReader::open(path)?.collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_whole_file_with_invalid_utf8_names_its_line_and_byte() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config.json");
        std::fs::write(&p, b"{\n  \"a\": 1,\n  \"b\": \"x\xffy\"\n}\n").unwrap();
        let err = read_text(&p).unwrap_err().to_string();
        assert!(
            err.ends_with("config.json:3: invalid UTF-8 at byte 9 of the line"),
            "{err}"
        );
        std::fs::write(&p, "{\"ok\": \"\u{e9}\"}\n").unwrap();
        assert_eq!(read_text(&p).unwrap(), "{\"ok\": \"\u{e9}\"}\n");
        let err = read_text(dir.path().join("missing.json"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing.json"), "{err}");
    }

    #[test]
    fn reads_plain_crlf_and_keeps_empty_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.txt");
        std::fs::write(&p, b"one\r\n\r\nthree\nfour").unwrap();
        assert_eq!(read_lines(&p).unwrap(), vec!["one", "", "three", "four"]);
    }

    #[test]
    fn reads_gzip_by_magic_not_name() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("plain-name.txt");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all("héllo\nwörld\n".as_bytes()).unwrap();
        std::fs::write(&p, gz.finish().unwrap()).unwrap();
        assert_eq!(read_lines(&p).unwrap(), vec!["héllo", "wörld"]);
    }

    /// A named pipe can be read once: the bytes sniffed for gzip must not be lost (a
    /// reader that opened the path again dropped them: "one" came back as "e").
    #[cfg(unix)]
    #[test]
    fn reads_a_pipe_plain_and_gzip_without_losing_the_sniffed_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(b"one\ntwo\n").unwrap();
        for (name, bytes) in [
            ("plain", b"one\ntwo\n".to_vec()),
            ("gzip", gz.finish().unwrap()),
        ] {
            let p = dir.path().join(name);
            let made = std::process::Command::new("mkfifo")
                .arg(&p)
                .status()
                .unwrap();
            assert!(made.success(), "mkfifo {}", p.display());
            let writer_path = p.clone();
            let writer = std::thread::spawn(move || std::fs::write(writer_path, bytes).unwrap());
            // Read on a thread of its own: a reader that opens the pipe a second time
            // after the writer closed it would block for ever; this fails instead.
            let (sent, received) = std::sync::mpsc::channel();
            let reader_path = p.clone();
            std::thread::spawn(move || sent.send(read_lines(&reader_path)).unwrap());
            let lines = received
                .recv_timeout(std::time::Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("{name}: reading the pipe did not finish"))
                .unwrap();
            writer.join().unwrap();
            assert_eq!(lines, vec!["one", "two"], "{name}");
        }
    }

    #[test]
    fn invalid_utf8_names_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("bad.txt");
        std::fs::write(&p, b"fine\nalso fine\nbro\xffken\n").unwrap();
        let err = read_lines(&p).unwrap_err().to_string();
        assert!(err.contains("bad.txt:3:"), "{err}");
        assert!(err.contains("invalid UTF-8"), "{err}");
    }
}
