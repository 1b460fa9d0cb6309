//! Matrix Market reader and writer (`coordinate` and `array`; `real`, `integer`, `pattern`).
//!
//! The reader is strict about structure and lenient about layout: the banner is
//! case-insensitive, `%` comments and blank lines may appear anywhere after it, and fields may be
//! separated by any whitespace. Symmetric and skew-symmetric files are expanded to full storage.
//! `complex` matrices are refused with [`MatrixMarketErrorKind::UnsupportedField`].
//!
//! Nothing is allocated from a count in the header: arrays grow with the entries actually read,
//! so a tiny file claiming billions of entries fails fast with
//! [`MatrixMarketErrorKind::TooFewEntries`]. (CSR, [`read_csr`], then holds an offset for
//! every row the header names: 4 bytes a row.)

use std::fmt;
use std::io::{BufRead, BufWriter, Write};
use std::path::Path;

use super::{BitmapMatrix, BitmapOptions, CooMatrix, CsrMatrix, DenseMatrix, Scalar};

/// Why a Matrix Market file could not be read or written, and where.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}{kind}", line_prefix(.line))]
pub struct MatrixMarketError {
    /// 1-based line of the problem; 0 when it is not tied to a line (I/O). Errors found at the
    /// end of the input (missing size line, too few entries) name the line after the last.
    pub line: usize,
    /// What is wrong.
    pub kind: MatrixMarketErrorKind,
}

/// Formats "line N: " for errors tied to a line.
struct LinePrefix(usize);

fn line_prefix(line: &usize) -> LinePrefix {
    LinePrefix(*line)
}

impl fmt::Display for LinePrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 > 0 {
            write!(f, "line {}: ", self.0)
        } else {
            Ok(())
        }
    }
}

/// The kinds of [`MatrixMarketError`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MatrixMarketErrorKind {
    /// Reading or writing failed.
    #[error("I/O error: {0}")]
    Io(String),
    /// The first line is not a `%%MatrixMarket` banner.
    #[error("missing `%%MatrixMarket` banner on the first line")]
    MissingBanner,
    /// The banner does not have the form `%%MatrixMarket object format field symmetry`.
    #[error("malformed banner {0:?}: expected `%%MatrixMarket matrix <format> <field> <symmetry>`")]
    MalformedBanner(String),
    /// The object is not `matrix`.
    #[error("unsupported object {0:?}: only `matrix` is supported")]
    UnsupportedObject(String),
    /// The format is neither `coordinate` nor `array`.
    #[error("unsupported format {0:?}: expected `coordinate` or `array`")]
    UnsupportedFormat(String),
    /// The field is not `real`, `double`, `integer` or `pattern` (`complex` lands here).
    #[error(
        "unsupported field {0:?}: wgsparse reads `real`, `integer` and `pattern` matrices (complex is not supported)"
    )]
    UnsupportedField(String),
    /// The symmetry is not `general`, `symmetric`, `skew-symmetric` or `hermitian`.
    #[error("unsupported symmetry {0:?}: expected `general`, `symmetric` or `skew-symmetric`")]
    UnsupportedSymmetry(String),
    /// A valid symmetry that the field does not allow (`hermitian` without complex values,
    /// `skew-symmetric pattern`).
    #[error("symmetry `{symmetry}` is not valid for field `{field}`")]
    InvalidSymmetryForField {
        /// The symmetry, lowercase.
        symmetry: String,
        /// The field, lowercase.
        field: String,
    },
    /// `array pattern`: an array stores every value, a pattern has none.
    #[error("the `pattern` field is only valid with the `coordinate` format")]
    PatternArray,
    /// The input ends before the size line.
    #[error("missing size line")]
    MissingSizeLine,
    /// The size line is not `rows cols entries` (coordinate) or `rows cols` (array).
    #[error("bad size line: {0}")]
    BadSizeLine(String),
    /// An entry line could not be parsed.
    #[error("bad entry: {0}")]
    BadEntry(String),
    /// An entry's 1-based index is 0 or beyond the matrix.
    #[error("entry ({row}, {col}) is outside the {rows} x {cols} matrix (indices are 1-based)")]
    IndexOutOfRange {
        /// Row index as written.
        row: u64,
        /// Column index as written.
        col: u64,
        /// Rows of the matrix.
        rows: usize,
        /// Columns of the matrix.
        cols: usize,
    },
    /// More entries than the size line announced.
    #[error("more entries than the {expected} announced")]
    TooManyEntries {
        /// The announced count.
        expected: u64,
    },
    /// The input ends before the announced number of entries.
    #[error("expected {expected} entries, found {found}")]
    TooFewEntries {
        /// The announced count.
        expected: u64,
        /// The count read.
        found: u64,
    },
    /// A symmetric or skew-symmetric matrix must be square.
    #[error("a symmetric matrix must be square, this one is {rows} x {cols}")]
    NonSquareSymmetric {
        /// Rows.
        rows: usize,
        /// Columns.
        cols: usize,
    },
    /// A skew-symmetric matrix has a zero diagonal, which the file must not store.
    #[error("skew-symmetric matrix stores diagonal entry ({index}, {index})")]
    DiagonalInSkew {
        /// The 1-based index.
        index: u64,
    },
    /// A symmetric or skew-symmetric file stores an off-diagonal entry and its mirror:
    /// expanding both would count the value twice.
    #[error(
        "entry ({row}, {col}) mirrors entry ({col}, {row}) stored earlier; a {symmetry} file stores one of each pair"
    )]
    MirroredEntry {
        /// Row index as written (1-based).
        row: u64,
        /// Column index as written (1-based).
        col: u64,
        /// `symmetric` or `skew-symmetric`.
        symmetry: &'static str,
    },
    /// A value the requested element type cannot hold (past f32's range when reading f32):
    /// read as f64 instead.
    #[error("value {value} is outside the range of {element}; read the file as f64")]
    ValueOutOfRange {
        /// The value as written.
        value: String,
        /// The element type asked for.
        element: &'static str,
    },
    /// Dimensions or entry counts (after symmetric expansion) do not fit u32 indices.
    #[error("too large: {0}")]
    TooLarge(String),
}

impl MatrixMarketError {
    fn new(line: usize, kind: MatrixMarketErrorKind) -> Self {
        MatrixMarketError { line, kind }
    }
    fn io(e: std::io::Error) -> Self {
        Self::new(0, MatrixMarketErrorKind::Io(e.to_string()))
    }
}

/// The object of a Matrix Market file; only matrices are supported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Object {
    /// `matrix`.
    Matrix,
}

/// How the entries are laid out (the banner's "format" field).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One `row col [value]` line per stored entry.
    Coordinate,
    /// Every value, column by column (only the lower triangle when symmetric).
    Array,
}

/// The type of the values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// Floating point (`real` or `double`).
    Real,
    /// Integers, converted to the scalar type.
    Integer,
    /// No values: every stored entry is 1.
    Pattern,
}

/// Which part of the matrix the file stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Symmetry {
    /// Every entry.
    General,
    /// The lower triangle of a matrix with `a_ji = a_ij`.
    Symmetric,
    /// The strict lower triangle of a matrix with `a_ji = -a_ij`.
    SkewSymmetric,
}

/// What the banner and size line of a file say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Always [`Object::Matrix`].
    pub object: Object,
    /// Coordinate or array.
    pub layout: Layout,
    /// Value type.
    pub field: Field,
    /// Storage symmetry.
    pub symmetry: Symmetry,
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// Entries stored in the file: the size line's count for coordinate files, the number of
    /// values for array files (before symmetric expansion in both cases).
    pub entries: u64,
}

/// A matrix as read, in the form its file stores.
#[derive(Debug, Clone, PartialEq)]
pub enum MatrixMarket<T> {
    /// A coordinate file, symmetric storage expanded; entries in file order (mirrored entries
    /// follow their originals), explicit zeros kept.
    Coordinate(CooMatrix<T>),
    /// An array file, symmetric storage expanded.
    Array(DenseMatrix<T>),
}

impl<T: Scalar> MatrixMarket<T> {
    /// As COO; an array matrix keeps only its nonzero entries.
    pub fn into_coo(self) -> CooMatrix<T> {
        match self {
            MatrixMarket::Coordinate(coo) => coo,
            MatrixMarket::Array(dense) => dense.to_coo(),
        }
    }
    /// As CSR (duplicates summed, columns sorted); an array matrix keeps only its nonzeros.
    pub fn into_csr(self) -> CsrMatrix<T> {
        match self {
            MatrixMarket::Coordinate(coo) => coo.to_csr(),
            MatrixMarket::Array(dense) => dense.to_csr(),
        }
    }
}

/// Reads a Matrix Market file from a buffered reader.
pub fn read<T: Scalar, R: BufRead>(reader: R) -> Result<(Header, MatrixMarket<T>), MatrixMarketError> {
    let mut lines = Lines { reader, buf: Vec::new(), line: 0 };
    let (layout, field, symmetry) = read_banner(&mut lines)?;
    let Some((line, size)) = lines.next_data()? else {
        return Err(MatrixMarketError::new(lines.line + 1, MatrixMarketErrorKind::MissingSizeLine));
    };
    let size = parse_size_line(size, layout).map_err(|k| MatrixMarketError::new(line, k))?;
    let (rows, cols) = (size[0], size[1]);
    let too_large = |what: String| MatrixMarketError::new(line, MatrixMarketErrorKind::TooLarge(what));
    for (what, n) in [("rows", rows), ("cols", cols)] {
        if n > u64::from(u32::MAX) {
            return Err(too_large(format!("{what} = {n} does not fit u32 indices")));
        }
    }
    let (rows, cols) = (rows as usize, cols as usize);
    if symmetry != Symmetry::General && rows != cols {
        return Err(MatrixMarketError::new(line, MatrixMarketErrorKind::NonSquareSymmetric { rows, cols }));
    }
    let entries = match layout {
        Layout::Coordinate => size[2],
        Layout::Array => {
            let n = rows as u64;
            match symmetry {
                Symmetry::General => n * cols as u64,
                Symmetry::Symmetric => n * (n + 1) / 2,
                Symmetry::SkewSymmetric => n * n.saturating_sub(1) / 2,
            }
        }
    };
    if layout == Layout::Array && rows as u64 * cols as u64 > u64::from(u32::MAX) {
        return Err(too_large(format!("array of {rows} x {cols} values does not fit u32 indices")));
    }
    if entries > u64::from(u32::MAX) {
        return Err(too_large(format!("{entries} entries do not fit u32 indices")));
    }
    let header = Header { object: Object::Matrix, layout, field, symmetry, rows, cols, entries };
    let matrix = match layout {
        Layout::Coordinate => MatrixMarket::Coordinate(read_coordinate(&mut lines, &header)?),
        Layout::Array => MatrixMarket::Array(read_array(&mut lines, &header)?),
    };
    Ok((header, matrix))
}

/// Reads a Matrix Market file from disk.
pub fn read_path<T: Scalar>(path: impl AsRef<Path>) -> Result<(Header, MatrixMarket<T>), MatrixMarketError> {
    let file = std::fs::File::open(path.as_ref()).map_err(|e| {
        MatrixMarketError::new(0, MatrixMarketErrorKind::Io(format!("{}: {e}", path.as_ref().display())))
    })?;
    read(std::io::BufReader::new(file))
}

/// Reads a Matrix Market file from disk straight into CSR (see [`MatrixMarket::into_csr`]).
pub fn read_csr<T: Scalar>(path: impl AsRef<Path>) -> Result<CsrMatrix<T>, MatrixMarketError> {
    Ok(read_path::<T>(path)?.1.into_csr())
}

/// Reads a Matrix Market file into the bitmap format, through CSR (repeated entries add up,
/// symmetric files are expanded), refused as [`BitmapMatrix::from_csr`] refuses.
pub fn read_bitmap<T: Scalar>(path: impl AsRef<Path>, options: &BitmapOptions) -> crate::Result<BitmapMatrix<T>> {
    Ok(BitmapMatrix::from_csr(&read_csr(path)?, options)?)
}

/// Writes a bitmap matrix as `coordinate real general`, through CSR.
pub fn write_bitmap<T: Scalar, W: Write>(writer: W, matrix: &BitmapMatrix<T>) -> Result<(), MatrixMarketError> {
    write_csr(writer, &matrix.to_csr())
}

/// Writes COO as `coordinate real general`; duplicates are written as they are. Values are
/// printed so that they read back bit for bit.
pub fn write_coo<T: Scalar, W: Write>(writer: W, matrix: &CooMatrix<T>) -> Result<(), MatrixMarketError> {
    let entries = matrix.row_indices().iter().zip(matrix.col_indices()).zip(matrix.values());
    write_coordinate(writer, matrix.rows(), matrix.cols(), entries.map(|((&r, &c), &v)| (r, c, v)), matrix.nnz())
}

/// Writes CSR as `coordinate real general`, row by row.
pub fn write_csr<T: Scalar, W: Write>(writer: W, matrix: &CsrMatrix<T>) -> Result<(), MatrixMarketError> {
    let entries = (0..matrix.rows()).flat_map(|i| {
        let (cols, vals) = matrix.row(i);
        cols.iter().zip(vals).map(move |(&c, &v)| (i as u32, c, v))
    });
    write_coordinate(writer, matrix.rows(), matrix.cols(), entries, matrix.nnz())
}

/// Writes a dense matrix as `array real general` (column-major, as the format requires).
pub fn write_dense<T: Scalar, W: Write>(writer: W, matrix: &DenseMatrix<T>) -> Result<(), MatrixMarketError> {
    write_dense_io(BufWriter::new(writer), matrix).map_err(MatrixMarketError::io)
}

fn write_dense_io<T: Scalar>(mut w: impl Write, matrix: &DenseMatrix<T>) -> std::io::Result<()> {
    writeln!(w, "%%MatrixMarket matrix array real general")?;
    writeln!(w, "{} {}", matrix.rows(), matrix.cols())?;
    for j in 0..matrix.cols() {
        for i in 0..matrix.rows() {
            write_value(&mut w, matrix.data()[i * matrix.cols() + j].to_f64())?;
        }
    }
    w.flush()
}

fn write_coordinate<T: Scalar, W: Write>(
    writer: W,
    rows: usize,
    cols: usize,
    entries: impl Iterator<Item = (u32, u32, T)>,
    nnz: usize,
) -> Result<(), MatrixMarketError> {
    write_coordinate_io(BufWriter::new(writer), rows, cols, entries, nnz).map_err(MatrixMarketError::io)
}

fn write_coordinate_io<T: Scalar>(
    mut w: impl Write,
    rows: usize,
    cols: usize,
    entries: impl Iterator<Item = (u32, u32, T)>,
    nnz: usize,
) -> std::io::Result<()> {
    writeln!(w, "%%MatrixMarket matrix coordinate real general")?;
    writeln!(w, "{rows} {cols} {nnz}")?;
    for (r, c, v) in entries {
        write!(w, "{} {} ", r as u64 + 1, c as u64 + 1)?;
        write_value(&mut w, v.to_f64())?;
    }
    w.flush()
}

/// Writes a value and ends the line: the shortest decimal that parses back to the same f64
/// (hence the same f32), in plain notation for ordinary magnitudes, exponent notation otherwise.
fn write_value(w: &mut impl Write, v: f64) -> std::io::Result<()> {
    if v == 0.0 || (1e-5..1e16).contains(&v.abs()) || !v.is_finite() {
        writeln!(w, "{v}")
    } else {
        writeln!(w, "{v:e}")
    }
}

/// Lines of the input, counted from 1.
struct Lines<R> {
    reader: R,
    buf: Vec<u8>,
    line: usize,
}

impl<R: BufRead> Lines<R> {
    /// The next line without its terminator, or `None` at the end of the input. Bytes, not
    /// text: comments may be in any encoding.
    fn next(&mut self) -> Result<Option<&[u8]>, MatrixMarketError> {
        Ok(self.advance()?.map(|range| &self.buf[range]))
    }

    /// The next line that is neither blank nor a `%` comment, with its number.
    fn next_data(&mut self) -> Result<Option<(usize, &[u8])>, MatrixMarketError> {
        while let Some(range) = self.advance()? {
            let line = self.buf[range.clone()].trim_ascii_start();
            if line.first().is_some_and(|&b| b != b'%') {
                let start = range.end - line.len();
                return Ok(Some((self.line, &self.buf[start..range.end])));
            }
        }
        Ok(None)
    }

    /// Reads the next line into `buf`; its range there without the terminator.
    fn advance(&mut self) -> Result<Option<std::ops::Range<usize>>, MatrixMarketError> {
        self.buf.clear();
        if self.reader.read_until(b'\n', &mut self.buf).map_err(MatrixMarketError::io)? == 0 {
            return Ok(None);
        }
        self.line += 1;
        let end = self.buf.len() - self.buf.iter().rev().take_while(|&&b| b == b'\n' || b == b'\r').count();
        Ok(Some(0..end))
    }
}

fn read_banner<R: BufRead>(lines: &mut Lines<R>) -> Result<(Layout, Field, Symmetry), MatrixMarketError> {
    use MatrixMarketErrorKind as K;
    let err = |kind| MatrixMarketError::new(1, kind);
    let line = lines.next()?.ok_or_else(|| err(K::MissingBanner))?;
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line); // UTF-8 byte order mark
    if !line.get(..14).is_some_and(|p| p.eq_ignore_ascii_case(b"%%MatrixMarket")) {
        return Err(err(K::MissingBanner));
    }
    let text = String::from_utf8_lossy(line).to_ascii_lowercase();
    let tokens: Vec<&str> = text.split_ascii_whitespace().collect();
    let [banner, object, format, field, symmetry] = tokens[..] else {
        return Err(err(K::MalformedBanner(excerpt(line))));
    };
    if banner != "%%matrixmarket" {
        return Err(err(K::MalformedBanner(excerpt(line))));
    }
    if object != "matrix" {
        return Err(err(K::UnsupportedObject(object.to_owned())));
    }
    let layout = match format {
        "coordinate" => Layout::Coordinate,
        "array" => Layout::Array,
        _ => return Err(err(K::UnsupportedFormat(format.to_owned()))),
    };
    let field_name = field;
    let field = match field {
        "real" | "double" => Field::Real,
        "integer" => Field::Integer,
        "pattern" => Field::Pattern,
        _ => return Err(err(K::UnsupportedField(field.to_owned()))),
    };
    let invalid = || err(K::InvalidSymmetryForField { symmetry: symmetry.to_owned(), field: field_name.to_owned() });
    let symmetry = match symmetry {
        "general" => Symmetry::General,
        "symmetric" => Symmetry::Symmetric,
        "skew-symmetric" if field == Field::Pattern => return Err(invalid()),
        "skew-symmetric" => Symmetry::SkewSymmetric,
        "hermitian" => return Err(invalid()), // only meaningful for complex values
        _ => return Err(err(K::UnsupportedSymmetry(symmetry.to_owned()))),
    };
    if layout == Layout::Array && field == Field::Pattern {
        return Err(err(K::PatternArray));
    }
    Ok((layout, field, symmetry))
}

/// `[rows, cols, entries]` (entries 0 for array files).
fn parse_size_line(line: &[u8], layout: Layout) -> Result<[u64; 3], MatrixMarketErrorKind> {
    let expected = match layout {
        Layout::Coordinate => "`rows cols entries`",
        Layout::Array => "`rows cols`",
    };
    let bad = || MatrixMarketErrorKind::BadSizeLine(format!("expected {expected}, found {:?}", excerpt(line)));
    let mut size = [0u64; 3];
    let mut tokens = line.split(u8::is_ascii_whitespace).filter(|t| !t.is_empty());
    let n = if layout == Layout::Coordinate { 3 } else { 2 };
    for slot in &mut size[..n] {
        *slot = tokens.next().and_then(parse::<u64>).ok_or_else(bad)?;
    }
    if tokens.next().is_some() {
        return Err(bad());
    }
    Ok(size)
}

fn read_coordinate<T: Scalar, R: BufRead>(
    lines: &mut Lines<R>,
    header: &Header,
) -> Result<CooMatrix<T>, MatrixMarketError> {
    use MatrixMarketErrorKind as K;
    // Capacity from the header is capped: the header may lie; growth covers the rest.
    let capacity = header.entries.min(1 << 16) as usize;
    let (mut row_indices, mut col_indices, mut values) =
        (Vec::with_capacity(capacity), Vec::with_capacity(capacity), Vec::with_capacity(capacity));
    let mut found = 0u64;
    // Off-diagonal positions of a symmetric file, (min, max, which triangle), to refuse a
    // stored mirror (both triangles given) before it doubles a value.
    let mut stored_off_diagonal = std::collections::HashSet::new();
    while let Some((line, text)) = lines.next_data()? {
        let err = |kind| MatrixMarketError::new(line, kind);
        if found == header.entries {
            return Err(err(K::TooManyEntries { expected: header.entries }));
        }
        found += 1;
        let mut tokens = text.split(u8::is_ascii_whitespace).filter(|t| !t.is_empty());
        let shape = if header.field == Field::Pattern { "`row col`" } else { "`row col value`" };
        let bad = |what: &str| err(K::BadEntry(format!("{what}: expected {shape}, found {:?}", excerpt(text))));
        let row = tokens.next().ok_or_else(|| bad("missing row"))?;
        let row = parse::<u64>(row).ok_or_else(|| bad("bad row index"))?;
        let col = tokens.next().ok_or_else(|| bad("missing column"))?;
        let col = parse::<u64>(col).ok_or_else(|| bad("bad column index"))?;
        let value = match header.field {
            Field::Pattern => 1.0,
            field => {
                let token = tokens.next().ok_or_else(|| bad("missing value"))?;
                let value = parse_value(token, field).ok_or_else(|| bad("bad value"))?;
                check_range::<T>(value, token).map_err(err)?
            }
        };
        if tokens.next().is_some() {
            return Err(bad("too many fields"));
        }
        if row == 0 || col == 0 || row > header.rows as u64 || col > header.cols as u64 {
            return Err(err(K::IndexOutOfRange { row, col, rows: header.rows, cols: header.cols }));
        }
        let (r, c) = (row as u32 - 1, col as u32 - 1);
        if header.symmetry != Symmetry::General && r != c {
            let key = |upper: bool| (r.min(c), r.max(c), upper);
            if stored_off_diagonal.contains(&key(r > c)) {
                let symmetry = if header.symmetry == Symmetry::Symmetric { "symmetric" } else { "skew-symmetric" };
                return Err(err(K::MirroredEntry { row, col, symmetry }));
            }
            stored_off_diagonal.insert(key(r < c));
        }
        let mirrored = match header.symmetry {
            Symmetry::General => None,
            Symmetry::SkewSymmetric if r == c => return Err(err(K::DiagonalInSkew { index: row })),
            Symmetry::SkewSymmetric => Some(-value),
            Symmetry::Symmetric => (r != c).then_some(value),
        };
        // Either triangle is accepted and mirrored, as SciPy does.
        for (r, c, v) in std::iter::once((r, c, value)).chain(mirrored.map(|v| (c, r, v))) {
            if row_indices.len() == u32::MAX as usize {
                return Err(err(K::TooLarge("more than u32::MAX entries after symmetric expansion".into())));
            }
            row_indices.push(r);
            col_indices.push(c);
            values.push(T::from_f64(v));
        }
    }
    if found < header.entries {
        return Err(MatrixMarketError::new(lines.line + 1, K::TooFewEntries { expected: header.entries, found }));
    }
    Ok(CooMatrix::from_parts_unchecked(header.rows, header.cols, row_indices, col_indices, values))
}

fn read_array<T: Scalar, R: BufRead>(
    lines: &mut Lines<R>,
    header: &Header,
) -> Result<DenseMatrix<T>, MatrixMarketError> {
    use MatrixMarketErrorKind as K;
    let mut stored = Vec::with_capacity(header.entries.min(1 << 16) as usize);
    while let Some((line, text)) = lines.next_data()? {
        let err = |kind| MatrixMarketError::new(line, kind);
        if stored.len() as u64 == header.entries {
            return Err(err(K::TooManyEntries { expected: header.entries }));
        }
        let mut tokens = text.split(u8::is_ascii_whitespace).filter(|t| !t.is_empty());
        let bad = |what: &str| err(K::BadEntry(format!("{what}: expected one value, found {:?}", excerpt(text))));
        let token = tokens.next().ok_or_else(|| bad("missing value"))?;
        let value = parse_value(token, header.field).ok_or_else(|| bad("bad value"))?;
        let value = check_range::<T>(value, token).map_err(err)?;
        if tokens.next().is_some() {
            return Err(bad("too many fields"));
        }
        stored.push(T::from_f64(value));
    }
    if (stored.len() as u64) < header.entries {
        return Err(MatrixMarketError::new(
            lines.line + 1,
            K::TooFewEntries { expected: header.entries, found: stored.len() as u64 },
        ));
    }
    // Every value is present, so the dense matrix is at most about twice the input.
    let (rows, cols) = (header.rows, header.cols);
    let mut dense =
        DenseMatrix::zeros(rows, cols).map_err(|e| MatrixMarketError::new(0, K::TooLarge(e.to_string())))?;
    let data = dense.data_mut();
    let mut values = stored.into_iter();
    for j in 0..cols {
        let first_row = match header.symmetry {
            Symmetry::General => 0,
            Symmetry::Symmetric => j,
            Symmetry::SkewSymmetric => j + 1,
        };
        for (i, v) in (first_row..rows).zip(&mut values) {
            data[i * cols + j] = v;
            match header.symmetry {
                Symmetry::General => {}
                Symmetry::Symmetric => data[j * cols + i] = v,
                Symmetry::SkewSymmetric => data[j * cols + i] = T::from_f64(-v.to_f64()),
            }
        }
    }
    Ok(dense)
}

/// `value` if `T` holds it without overflowing to infinity.
fn check_range<T: Scalar>(value: f64, token: &[u8]) -> Result<f64, MatrixMarketErrorKind> {
    if T::represents(value) {
        Ok(value)
    } else {
        Err(MatrixMarketErrorKind::ValueOutOfRange { value: excerpt(token), element: T::KIND.name() })
    }
}

fn parse<N: std::str::FromStr>(token: &[u8]) -> Option<N> {
    std::str::from_utf8(token).ok()?.parse().ok()
}

/// A value of a `real` or `integer` field. Fortran exponents (`1.5D+02`) are accepted.
fn parse_value(token: &[u8], field: Field) -> Option<f64> {
    match field {
        Field::Integer => parse::<i64>(token).map(|v| v as f64),
        _ => parse::<f64>(token).or_else(|| {
            let text = std::str::from_utf8(token).ok()?;
            if !text.contains(['d', 'D']) {
                return None;
            }
            text.replace(['d', 'D'], "e").parse().ok()
        }),
    }
}

/// A bounded, printable copy of input text for error messages.
fn excerpt(bytes: &[u8]) -> String {
    const MAX: usize = 80;
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX)]).into_owned();
    if bytes.len() > MAX {
        text + "..."
    } else {
        text
    }
}
