//! Matrix Market: the shared test matrices, every malformed case, writer round trips, fuzzing.

use proptest::prelude::*;
use wgsparse::format::matrix_market::{
    self, Field, Header, Layout, MatrixMarket, MatrixMarketError, MatrixMarketErrorKind as Kind, Symmetry,
};
use wgsparse::format::{CooMatrix, CsrMatrix, DenseMatrix};
use wgsparse::generate;

const MATRICES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/matrices");

fn path(name: &str) -> String {
    format!("{MATRICES}/{name}")
}

fn read_str<T: wgsparse::Scalar>(text: &str) -> Result<(Header, MatrixMarket<T>), MatrixMarketError> {
    matrix_market::read(text.as_bytes())
}

fn transpose(m: &CsrMatrix<f64>) -> CsrMatrix<f64> {
    let (rows, cols, r, c, v) = m.to_coo().into_parts();
    CooMatrix::try_new(cols, rows, c, r, v).unwrap().to_csr()
}

// ---- the shared matrices, read or refused as their README says ----

#[test]
fn reads_every_supported_shared_matrix() {
    use Field::*;
    use Symmetry::*;
    // file, field, symmetry, rows, cols, entries in the file
    let table = [
        ("west0479.mtx", Real, General, 479, 479, 1910),
        ("west0067.mtx", Real, General, 67, 67, 294),
        ("west0067_jumbled.mtx", Real, General, 67, 67, 294),
        ("bcsstk13.mtx", Real, Symmetric, 2003, 2003, 42943),
        ("494_bus.mtx", Real, Symmetric, 494, 494, 1080),
        ("rajat01.mtx", Pattern, General, 6833, 6833, 43250),
        ("cryg2500.mtx", Real, General, 2500, 2500, 12349),
        ("Pd.mtx", Real, General, 8081, 8081, 13036),
        ("dwt_992.mtx", Pattern, Symmetric, 992, 992, 8868),
        ("lp_e226.mtx", Real, General, 223, 472, 2768),
        ("lp_afiro.mtx", Real, General, 27, 51, 102),
        ("Franz6_id1959_aug.mtx", Integer, General, 10592, 3016, 48472),
        ("sparse-images-1024_subset.mtx", Pattern, General, 1200, 1024, 122713),
        ("karate.mtx", Pattern, Symmetric, 34, 34, 78),
        ("cage5.mtx", Real, General, 37, 37, 233),
        ("one.mtx", Real, General, 2, 2, 4),
        ("skew_fp64.mtx", Real, SkewSymmetric, 6, 6, 10),
        ("empty.mtx", Real, General, 3, 4, 0),
    ];
    for (name, field, symmetry, rows, cols, entries) in table {
        let (header, matrix) = matrix_market::read_path::<f64>(path(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            (header.layout, header.field, header.symmetry, header.rows, header.cols, header.entries),
            (Layout::Coordinate, field, symmetry, rows, cols, entries),
            "{name}"
        );
        let MatrixMarket::Coordinate(coo) = matrix else { panic!("{name}: not coordinate") };
        let diagonal = (0..coo.nnz()).filter(|&k| coo.row_indices()[k] == coo.col_indices()[k]).count() as u64;
        let expanded = if symmetry == General { entries } else { 2 * entries - diagonal };
        assert_eq!(coo.nnz() as u64, expanded, "{name}");
        let csr = coo.to_csr();
        assert_eq!((csr.rows(), csr.cols(), csr.nnz()), (rows, cols, coo.nnz()), "{name}: no duplicates");
        match symmetry {
            General => {}
            Symmetric => assert_eq!(transpose(&csr), csr, "{name}"),
            SkewSymmetric => assert_eq!(transpose(&csr), csr.map_values(|v| -v), "{name}"),
        }
        if field == Pattern {
            assert!(csr.values().iter().all(|&v| v == 1.0), "{name}");
        }
        if field == Integer {
            assert!(csr.values().iter().all(|v| v.fract() == 0.0), "{name}");
        }
    }
}

#[test]
fn refuses_the_malformed_shared_matrices() {
    let refused = |name: &str| matrix_market::read_path::<f32>(path(name)).unwrap_err();
    assert_eq!(refused("young1c.mtx"), MatrixMarketError { line: 1, kind: Kind::UnsupportedField("complex".into()) });
    assert_eq!(
        refused("bad_header.mtx"),
        MatrixMarketError { line: 1, kind: Kind::UnsupportedSymmetry("bogus".into()) }
    );
    assert_eq!(refused("mangled1.mtx"), MatrixMarketError { line: 1, kind: Kind::UnsupportedObject("mangled".into()) });
    assert!(refused("young1c.mtx").to_string().contains("complex is not supported"));
}

#[test]
fn empty_and_zero_column_matrices() {
    let (_, empty) = matrix_market::read_path::<f32>(path("empty.mtx")).unwrap();
    assert_eq!(empty.into_csr(), CsrMatrix::zeros(3, 4).unwrap());
    let (header, m) = matrix_market::read_path::<f32>(path("3by0.mtx")).unwrap();
    assert_eq!((header.layout, header.rows, header.cols, header.entries), (Layout::Array, 3, 0, 0));
    assert_eq!(m, MatrixMarket::Array(DenseMatrix::zeros(3, 0).unwrap()));
}

#[test]
fn skew_symmetric_values_and_infinities() {
    let m = matrix_market::read_csr::<f64>(path("skew_fp64.mtx")).unwrap();
    let dense = DenseMatrix::from_csr(&m).unwrap();
    assert_eq!(dense.get(3, 0), Some(-0.12565458736262625));
    assert_eq!(dense.get(0, 3), Some(0.12565458736262625));
    assert_eq!(dense.get(4, 0), Some(f64::INFINITY));
    assert_eq!(dense.get(0, 4), Some(f64::NEG_INFINITY));
    assert_eq!(m.nnz(), 20);
}

#[test]
fn jumbled_file_gives_the_same_matrix() {
    let a = matrix_market::read_csr::<f32>(path("west0067.mtx")).unwrap();
    let b = matrix_market::read_csr::<f32>(path("west0067_jumbled.mtx")).unwrap();
    assert_eq!(a, b);
}

#[test]
fn explicit_zeros_are_kept() {
    let m = matrix_market::read_csr::<f32>(path("one.mtx")).unwrap();
    assert_eq!(m.nnz(), 4);
    assert!(m.values().iter().all(|&v| v == 0.0));
}

// ---- malformed input, one case at a time: kind and line ----

/// Every malformed case: name, input, expected kind, expected line.
fn malformed_cases() -> Vec<(&'static str, String, Kind, usize)> {
    const COORD: &str = "%%MatrixMarket matrix coordinate real general\n";
    vec![
        ("empty input", String::new(), Kind::MissingBanner, 1),
        ("no banner", "3 3 1\n1 1 1\n".into(), Kind::MissingBanner, 1),
        ("comment, not banner", "% MatrixMarket matrix\n".into(), Kind::MissingBanner, 1),
        (
            "banner short",
            "%%MatrixMarket matrix coordinate real\n".into(),
            Kind::MalformedBanner("%%MatrixMarket matrix coordinate real".into()),
            1,
        ),
        (
            "banner glued",
            "%%MatrixMarketmatrix coordinate real general\n".into(),
            Kind::MalformedBanner("%%MatrixMarketmatrix coordinate real general".into()),
            1,
        ),
        (
            "object",
            "%%MatrixMarket vector coordinate real general\n".into(),
            Kind::UnsupportedObject("vector".into()),
            1,
        ),
        ("format", "%%MatrixMarket matrix sparse real general\n".into(), Kind::UnsupportedFormat("sparse".into()), 1),
        (
            "complex",
            "%%MatrixMarket matrix coordinate complex general\n".into(),
            Kind::UnsupportedField("complex".into()),
            1,
        ),
        (
            "symmetry",
            "%%MatrixMarket matrix coordinate real upper\n".into(),
            Kind::UnsupportedSymmetry("upper".into()),
            1,
        ),
        (
            "hermitian real",
            "%%MatrixMarket matrix coordinate real hermitian\n".into(),
            Kind::InvalidSymmetryForField { symmetry: "hermitian".into(), field: "real".into() },
            1,
        ),
        (
            "skew pattern",
            "%%MatrixMarket matrix coordinate pattern skew-symmetric\n".into(),
            Kind::InvalidSymmetryForField { symmetry: "skew-symmetric".into(), field: "pattern".into() },
            1,
        ),
        ("array pattern", "%%MatrixMarket matrix array pattern general\n".into(), Kind::PatternArray, 1),
        ("no size line", format!("{COORD}% comment\n\n"), Kind::MissingSizeLine, 4),
        ("size line short", format!("{COORD}3 3\n"), bad_size("`rows cols entries`", "3 3"), 2),
        ("size line long", format!("{COORD}3 3 1 1\n"), bad_size("`rows cols entries`", "3 3 1 1"), 2),
        ("size line text", format!("{COORD}% c\n3 x 1\n"), bad_size("`rows cols entries`", "3 x 1"), 3),
        (
            "array size line",
            "%%MatrixMarket matrix array real general\n3 3 9\n".into(),
            bad_size("`rows cols`", "3 3 9"),
            2,
        ),
        (
            "rows beyond u32",
            format!("{COORD}4294967296 1 0\n"),
            too_large("rows = 4294967296 does not fit u32 indices"),
            2,
        ),
        (
            "entries beyond u32",
            format!("{COORD}1 1 4294967296\n"),
            too_large("4294967296 entries do not fit u32 indices"),
            2,
        ),
        (
            "huge array",
            "%%MatrixMarket matrix array real general\n1000000000 1000000000\n1.0\n".into(),
            too_large("array of 1000000000 x 1000000000 values does not fit u32 indices"),
            2,
        ),
        (
            "non-square symmetric",
            "%%MatrixMarket matrix coordinate real symmetric\n2 3 1\n1 1 1\n".into(),
            Kind::NonSquareSymmetric { rows: 2, cols: 3 },
            2,
        ),
        ("zero row index", format!("{COORD}3 3 1\n0 1 1.0\n"), out_of_range(0, 1), 3),
        ("row beyond dims", format!("{COORD}3 3 2\n1 1 1.0\n4 1 1.0\n"), out_of_range(4, 1), 4),
        ("column beyond dims", format!("{COORD}3 3 1\n% c\n1 4 1.0\n"), out_of_range(1, 4), 4),
        ("too many entries", format!("{COORD}3 3 1\n1 1 1.0\n\n2 2 1.0\n"), Kind::TooManyEntries { expected: 1 }, 5),
        (
            "too few entries",
            format!("{COORD}3 3 3\n1 1 1.0\n2 2 1.0\n"),
            Kind::TooFewEntries { expected: 3, found: 2 },
            5,
        ),
        (
            "too few, no final newline",
            format!("{COORD}3 3 3\n1 1 1.0"),
            Kind::TooFewEntries { expected: 3, found: 1 },
            4,
        ),
        ("bad value", format!("{COORD}3 3 1\n1 1 abc\n"), bad_entry("bad value", "`row col value`", "1 1 abc"), 3),
        ("bad index", format!("{COORD}3 3 1\n1.0 1 2\n"), bad_entry("bad row index", "`row col value`", "1.0 1 2"), 3),
        ("missing value", format!("{COORD}3 3 1\n1 1\n"), bad_entry("missing value", "`row col value`", "1 1"), 3),
        (
            "extra field",
            format!("{COORD}3 3 1\n1 1 1.0 2.0\n"),
            bad_entry("too many fields", "`row col value`", "1 1 1.0 2.0"),
            3,
        ),
        (
            "pattern with value",
            "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 1 1\n".into(),
            bad_entry("too many fields", "`row col`", "1 1 1"),
            3,
        ),
        (
            "integer with fraction",
            "%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 1 1.5\n".into(),
            bad_entry("bad value", "`row col value`", "1 1 1.5"),
            3,
        ),
        (
            "skew diagonal",
            "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 1.0\n2 2 0.0\n".into(),
            Kind::DiagonalInSkew { index: 2 },
            4,
        ),
        (
            "array too few",
            "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n".into(),
            Kind::TooFewEntries { expected: 4, found: 3 },
            6,
        ),
        (
            "array too many",
            "%%MatrixMarket matrix array real symmetric\n2 2\n1\n2\n3\n4\n".into(),
            Kind::TooManyEntries { expected: 3 },
            6,
        ),
        (
            "array two per line",
            "%%MatrixMarket matrix array real general\n1 2\n1 2\n".into(),
            Kind::BadEntry("too many fields: expected one value, found \"1 2\"".into()),
            3,
        ),
        (
            "symmetric entry and its mirror",
            "%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n2 1 5\n1 1 1\n1 2 5\n".into(),
            Kind::MirroredEntry { row: 1, col: 2, symmetry: "symmetric" },
            5,
        ),
        (
            "skew-symmetric entry and its mirror",
            "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n3 1 5\n1 3 -5\n".into(),
            Kind::MirroredEntry { row: 1, col: 3, symmetry: "skew-symmetric" },
            4,
        ),
        (
            "pattern symmetric mirror",
            "%%MatrixMarket matrix coordinate pattern symmetric\n4 4 2\n2 4\n4 2\n".into(),
            Kind::MirroredEntry { row: 4, col: 2, symmetry: "symmetric" },
            4,
        ),
        (
            "value past f32",
            format!("{COORD}2 2 2\n1 1 1\n2 2 1e300\n"),
            Kind::ValueOutOfRange { value: "1e300".into(), element: "f32" },
            4,
        ),
        (
            "array value past f32",
            "%%MatrixMarket matrix array real general\n1 2\n-4e38\n1\n".into(),
            Kind::ValueOutOfRange { value: "-4e38".into(), element: "f32" },
            3,
        ),
    ]
}

#[test]
fn every_malformed_case_names_its_kind_and_line() {
    for (name, text, kind, line) in malformed_cases() {
        let err = read_str::<f32>(&text).expect_err(name);
        assert_eq!(err, MatrixMarketError { line, kind }, "{name}");
    }
}

#[test]
fn error_messages_read_well() {
    let messages: Vec<String> = malformed_cases()
        .into_iter()
        .map(|(name, text, _, _)| format!("{name}: {}", read_str::<f32>(&text).unwrap_err()))
        .collect();
    insta::assert_snapshot!(messages.join("\n"));
}

fn bad_size(expected: &str, found: &str) -> Kind {
    Kind::BadSizeLine(format!("expected {expected}, found {found:?}"))
}
fn too_large(what: &str) -> Kind {
    Kind::TooLarge(what.into())
}
fn out_of_range(row: u64, col: u64) -> Kind {
    Kind::IndexOutOfRange { row, col, rows: 3, cols: 3 }
}
fn bad_entry(what: &str, shape: &str, found: &str) -> Kind {
    Kind::BadEntry(format!("{what}: expected {shape}, found {found:?}"))
}

#[test]
fn error_messages_name_the_line() {
    let err = read_str::<f32>("%%MatrixMarket matrix coordinate real general\n3 3 1\n0 1 1.0\n").unwrap_err();
    assert_eq!(err.to_string(), "line 3: entry (0, 1) is outside the 3 x 3 matrix (indices are 1-based)");
    let io = MatrixMarketError { line: 0, kind: Kind::Io("disk on fire".into()) };
    assert_eq!(io.to_string(), "I/O error: disk on fire");
    let missing = matrix_market::read_path::<f32>(path("no_such_file.mtx")).unwrap_err();
    assert!(matches!(missing.kind, Kind::Io(ref m) if m.contains("no_such_file.mtx")), "{missing}");
    let crate_error: wgsparse::Error = err.into();
    assert!(crate_error.to_string().starts_with("line 3:"));
}

#[test]
fn lying_headers_fail_fast_without_allocating() {
    // A coordinate header claiming u32::MAX entries, and an array header of 65535 x 65535
    // (just within u32), each followed by one entry: both must end in TooFewEntries at once.
    let start = std::time::Instant::now();
    let err = read_str::<f32>("%%MatrixMarket matrix coordinate real general\n5 5 4294967295\n1 1 1\n").unwrap_err();
    assert_eq!(err.kind, Kind::TooFewEntries { expected: 4_294_967_295, found: 1 });
    let err = read_str::<f32>("%%MatrixMarket matrix array real general\n65535 65535\n1\n").unwrap_err();
    assert_eq!(err.kind, Kind::TooFewEntries { expected: 65535 * 65535, found: 1 });
    let err = read_str::<f32>("%%MatrixMarket matrix coordinate real symmetric\n4294967295 4294967295 3\n1 1 1\n")
        .unwrap_err();
    assert_eq!(err.kind, Kind::TooFewEntries { expected: 3, found: 1 });
    assert!(start.elapsed().as_secs() < 5, "lying headers took {:?}", start.elapsed());
}

// ---- what the reader tolerates ----

#[test]
fn layout_freedoms() {
    let text = "\u{feff}%%matrixmarket MATRIX Coordinate REAL General\r\n\
                % comment\r\n\
                \r\n\
                2\t3   3\r\n\
                % between entries\r\n\
                1 1 1.5D+01\r\n\
                \r\n\
                \t2  3\t-2.5e-1  \r\n\
                2 3 inf";
    let (header, m) = read_str::<f64>(text).unwrap();
    assert_eq!((header.rows, header.cols, header.entries), (2, 3, 3));
    let coo = m.into_coo();
    assert_eq!(coo.values(), &[15.0, -0.25, f64::INFINITY]);
    assert_eq!(coo.to_csr().values(), &[15.0, f64::INFINITY], "duplicates summed");
}

#[test]
fn array_symmetric_storage_is_expanded() {
    let text = "%%MatrixMarket matrix array real symmetric\n3 3\n1\n2\n3\n4\n5\n6\n";
    let (header, m) = read_str::<f32>(text).unwrap();
    assert_eq!(header.entries, 6);
    let dense = DenseMatrix::try_new(3, 3, vec![1.0, 2.0, 3.0, 2.0, 4.0, 5.0, 3.0, 5.0, 6.0]).unwrap();
    assert_eq!(m, MatrixMarket::Array(dense));
    let text = "%%MatrixMarket matrix array integer skew-symmetric\n3 3\n1\n2\n3\n";
    let (_, m) = read_str::<f32>(text).unwrap();
    let dense = DenseMatrix::try_new(3, 3, vec![0.0, -1.0, -2.0, 1.0, 0.0, -3.0, 2.0, 3.0, 0.0]).unwrap();
    assert_eq!(m, MatrixMarket::Array(dense));
    let text = "%%MatrixMarket matrix array real general\n2 3\n1\n2\n3\n4\n5\n0\n";
    let (_, m) = read_str::<f32>(text).unwrap();
    assert_eq!(m.clone().into_coo().nnz(), 5, "array zeros dropped");
    let csr = m.into_csr();
    assert_eq!(DenseMatrix::from_csr(&csr).unwrap().data(), &[1.0, 3.0, 5.0, 2.0, 4.0, 0.0]);
}

/// The same entry twice in one triangle of a symmetric file adds up, as in a general file;
/// only a stored mirror is refused (see `malformed_cases`). f64 keeps what f32 cannot hold,
/// and infinities written as such are read as such in both.
#[test]
fn repeats_add_up_and_f64_keeps_large_values() {
    let text = "%%MatrixMarket matrix coordinate real symmetric\n2 2 2\n2 1 5\n2 1 1\n";
    let dense = DenseMatrix::from_csr(&read_str::<f32>(text).unwrap().1.into_csr()).unwrap();
    assert_eq!(dense.data(), &[0.0, 6.0, 6.0, 0.0]);
    let big = "%%MatrixMarket matrix coordinate real general\n1 2 2\n1 1 1e300\n1 2 -inf\n";
    let m = read_str::<f64>(big).unwrap().1.into_csr();
    assert_eq!(m.values(), &[1e300, f64::NEG_INFINITY]);
    let inf = "%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 inf\n";
    assert_eq!(read_str::<f32>(inf).unwrap().1.into_csr().values(), &[f32::INFINITY]);
}

#[test]
fn symmetric_entries_of_either_triangle_are_mirrored() {
    let text = "%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n2 1 5\n1 3 7\n2 2 1\n";
    let m = read_str::<f32>(text).unwrap().1.into_csr();
    let dense = DenseMatrix::from_csr(&m).unwrap();
    assert_eq!(dense.data(), &[0.0, 5.0, 7.0, 5.0, 1.0, 0.0, 7.0, 0.0, 0.0]);
}

// ---- writer → reader ----

fn bits<T: wgsparse::Scalar>(values: &[T]) -> Vec<u64> {
    values.iter().map(|v| v.to_f64().to_bits()).collect()
}

#[test]
fn written_values_read_back_bit_for_bit() {
    let specials = [
        0.0f32,
        -0.0,
        1.0,
        0.1,
        -1.0 / 3.0,
        f32::MAX,
        f32::MIN_POSITIVE,
        1e-45,
        1e30,
        123456.79,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
    ];
    let n = specials.len() as u32;
    let coo = CooMatrix::try_new(n as usize, 2, (0..n).collect(), vec![1; n as usize], specials.to_vec()).unwrap();
    let mut file = Vec::new();
    matrix_market::write_coo(&mut file, &coo).unwrap();
    let back = read_str::<f32>(std::str::from_utf8(&file).unwrap()).unwrap().1.into_coo();
    assert_eq!(back.row_indices(), coo.row_indices());
    assert_eq!(back.col_indices(), coo.col_indices());
    assert_eq!(bits(back.values()), bits(coo.values()));

    let doubles = [0.1f64, -1e-300, 1e300, std::f64::consts::PI, 5e-324, f64::MAX];
    let dense = DenseMatrix::try_new(2, 3, doubles.to_vec()).unwrap();
    let mut file = Vec::new();
    matrix_market::write_dense(&mut file, &dense).unwrap();
    let (header, back) = read_str::<f64>(std::str::from_utf8(&file).unwrap()).unwrap();
    assert_eq!(header.layout, Layout::Array);
    let MatrixMarket::Array(back) = back else { panic!("not an array") };
    assert_eq!(bits(back.data()), bits(dense.data()));
}

#[test]
fn coo_and_csr_round_trip_through_files() {
    let coo = generate::random_coo(30, 20, 200, 7);
    let mut file = Vec::new();
    matrix_market::write_coo(&mut file, &coo).unwrap();
    assert_eq!(read_str::<f32>(std::str::from_utf8(&file).unwrap()).unwrap().1.into_coo(), coo);

    let csr = generate::dense_row_mix(50, 40, 8);
    let dir = std::env::temp_dir().join(format!("wgsparse-mm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("dense_row_mix.mtx");
    matrix_market::write_csr(std::fs::File::create(&file).unwrap(), &csr).unwrap();
    let back = matrix_market::read_csr::<f32>(&file);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(back.unwrap(), csr);
}

// ---- fuzzing: any input gives Ok or Err, never a panic or a runaway allocation ----

/// A small valid file with every feature the mutations can break.
const SEED_FILE: &str =
    "%%MatrixMarket matrix coordinate real symmetric\n% comment\n4 4 5\n1 1 2.5\n2 1 -1\n\n3 2 1e3\n4 4 .5\n4 3 -7\n";

const NASTY_LINES: [&str; 10] = [
    "",
    "%",
    "0 0 0",
    "99999999999999999999 1 1",
    "1 1 nan",
    "4294967295 4294967295 4294967295",
    "%%MatrixMarket matrix array real general",
    "1 1 1 1 1 1",
    "-1 -1 -1",
    "\u{0}\u{ff}",
];

#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Truncate(usize),
    InsertLine(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(p, b)| Mutation::Flip(p, b)),
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), 0..NASTY_LINES.len()).prop_map(|(p, l)| Mutation::InsertLine(p, l)),
    ]
}

fn mutate(mut file: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for m in mutations {
        match *m {
            Mutation::Flip(p, b) if !file.is_empty() => {
                let n = file.len();
                file[p % n] ^= b;
            }
            Mutation::Truncate(p) => file.truncate(p % (file.len() + 1)),
            Mutation::InsertLine(p, l) => {
                let starts: Vec<usize> =
                    std::iter::once(0).chain((0..file.len()).filter(|&i| file[i] == b'\n').map(|i| i + 1)).collect();
                let at = starts[p % starts.len()];
                let line = format!("{}\n", NASTY_LINES[l]);
                file.splice(at..at, line.bytes());
            }
            _ => {}
        }
    }
    file
}

/// Reads and, on success, checks that what came back is a valid matrix of the header's shape.
/// (CSR conversion is skipped for huge row counts: its `rows + 1` offsets are real memory.)
fn read_checked(bytes: &[u8]) {
    if let Ok((header, m)) = matrix_market::read::<f32, _>(bytes) {
        let coo = m.into_coo();
        assert_eq!((coo.rows(), coo.cols()), (header.rows, header.cols));
        let (rows, cols, r, c, v) = coo.clone().into_parts();
        assert!(CooMatrix::try_new(rows, cols, r, c, v).is_ok());
        if rows <= 1 << 16 {
            let (rows, cols, offsets, indices, values) = coo.to_csr().into_parts();
            assert!(CsrMatrix::try_from_csr_data(rows, cols, offsets, indices, values).is_ok());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        read_checked(&bytes);
        let mut with_banner = b"%%MatrixMarket matrix coordinate real general\n".to_vec();
        with_banner.extend_from_slice(&bytes);
        read_checked(&with_banner);
    }

    #[test]
    fn mutated_files_never_panic(mutations in prop::collection::vec(mutation(), 1..4), seed in 0..2usize) {
        let seed_file = [SEED_FILE, "%%MatrixMarket matrix array real skew-symmetric\n3 3\n1\n2\n3\n"][seed];
        read_checked(&mutate(seed_file.as_bytes().to_vec(), &mutations));
    }
}

#[test]
fn the_seed_files_are_valid() {
    read_str::<f32>(SEED_FILE).unwrap();
    let m = read_str::<f32>(SEED_FILE).unwrap().1.into_csr();
    assert_eq!(m.nnz(), 8);
}

/// A symmetric file's check for an entry given with its mirror tells entries apart by both
/// indices whole: past 2^31 rows, (3·10⁹, 6) and (2147483654, 3·10⁹) are different pairs (a
/// key that dropped the smaller index's top bit took them for mirrors).
#[test]
fn symmetric_entries_past_two_to_the_31_are_told_apart() {
    let text = "%%MatrixMarket matrix coordinate real symmetric\n3000000000 3000000000 2\n3000000000 6 1\n2147483654 3000000000 2\n";
    let (_, matrix) = read_str::<f64>(text).unwrap();
    assert_eq!(matrix.into_coo().nnz(), 4);
}
