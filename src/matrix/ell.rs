//! Column-major padded ELL on the GPU, with 32-bit columns or 16-bit diagonal offsets, and
//! with its values in place or as 16-bit codes into a table of the distinct values.

use std::collections::HashMap;

use crate::element::Scalar;
use crate::format::{CsrMatrix, EllMatrix, ELL_PADDING, MAX_DIAGONAL_OFFSET, MAX_VALUE_TABLE};
use crate::gpu::{Device, FastHash, GpuVec};
use crate::{Error, Result};

/// ELL on the GPU: slot `k` of row `i` at `k * rows + i`, so neighbouring invocations read
/// neighbouring words.
#[derive(Debug)]
pub struct GpuEll<T: Scalar> {
    rows: usize,
    width: usize,
    indices: EllIndices,
    /// Each slot's value, column-major, or with [`EllIndices::CodedOffsets`] the table.
    values: GpuVec<T>,
}

/// How a [`GpuEll`] stores its columns (spmv_ell.wgsl reads every encoding).
#[derive(Debug)]
#[non_exhaustive]
pub enum EllIndices {
    /// The column of each slot, column-major; [`ELL_PADDING`] pads.
    Columns(GpuVec<u32>),
    /// `column − (first_row + row)` as i16, two per word: slot `k` of row `i` is halfword
    /// `k * stride + i` with `stride` = rows rounded up to even; `0x8000` pads. Half the index
    /// bytes, for matrices whose entries all lie within 32,767 of the diagonal.
    DiagonalOffsets {
        /// The halfwords, two per word.
        packed: GpuVec<u32>,
        /// The matrix row of the panel's first row.
        first_row: u32,
        /// Halfwords per slot column.
        stride: u32,
    },
    /// One word per slot, column-major: the 16-bit diagonal offset in the low half (as
    /// `DiagonalOffsets`; `0x8000` pads) and in the high half the slot's code, its value's
    /// index in the table that [`GpuEll::values`] then holds. 4 bytes a slot instead of
    /// 6 (f32) or 10 (f64), for matrices with few distinct values.
    CodedOffsets {
        /// The words.
        words: GpuVec<u32>,
        /// The matrix row of the panel's first row.
        first_row: u32,
    },
}

/// How [`GpuEll::upload`] stores the slots: 32-bit columns, 16-bit diagonal offsets (the
/// caller checked [`within_diagonal_band`]), or those with value codes when the matrix has
/// at most `limit` distinct values (else offsets alone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EllEncoding {
    Columns,
    DiagonalOffsets,
    ValueTable { limit: usize },
}

/// The halfword marking an ELL padding slot among 16-bit diagonal offsets.
const OFFSET_PADDING: u16 = 0x8000;

impl<T: Scalar> GpuEll<T> {
    /// Uploads rows `first_row..` of a matrix, its slots encoded as `encoding` says.
    pub(crate) fn upload(device: &Device, a: &EllMatrix<T>, first_row: usize, encoding: EllEncoding) -> Result<Self> {
        debug_assert!(a.col_indices().iter().all(|&c| c == ELL_PADDING || (c as usize) < a.cols()));
        let (rows, width) = (a.rows(), a.width());
        let coded = match encoding {
            EllEncoding::ValueTable { limit } => ValueCodes::of(a, limit.min(MAX_VALUE_TABLE)),
            _ => None,
        };
        if let Some(codes) = coded {
            let capacity = table_capacity(a, codes.table.len());
            let (words, table) = codes.into_arrays(a, first_row, capacity);
            let indices =
                EllIndices::CodedOffsets { words: GpuVec::upload_on(device, &words)?, first_row: first_row as u32 };
            return Ok(GpuEll { rows, width, indices, values: GpuVec::upload_on(device, &table)? });
        }
        let indices = if encoding == EllEncoding::Columns {
            EllIndices::Columns(GpuVec::upload_on(device, a.col_indices())?)
        } else {
            let stride = rows + rows % 2;
            EllIndices::DiagonalOffsets {
                packed: GpuVec::upload_on(device, &pack_diagonal_offsets(a, first_row, stride))?,
                first_row: first_row as u32,
                stride: stride as u32,
            }
        };
        Ok(GpuEll { rows, width, indices, values: GpuVec::upload_on(device, a.values())? })
    }

    /// Refuses, with [`Error::Unsupported`], values that a value table cannot code: more
    /// distinct ones than it has room for. Checked for every panel before any is written.
    pub(crate) fn check_values(&self, a: &EllMatrix<T>) -> Result<()> {
        if self.value_table() {
            self.codes(a)?;
        }
        Ok(())
    }

    /// `a`'s values coded for this panel's table.
    fn codes(&self, a: &EllMatrix<T>) -> Result<ValueCodes<T>> {
        ValueCodes::of(a, self.values.len()).ok_or_else(|| {
            Error::Unsupported(format!(
                "update_values: a row panel stores its values as codes into a table of {} \
                 (EllOptions::value_table_limit) and the new values have more distinct ones; \
                 upload the matrix again",
                self.values.len()
            ))
        })
    }

    /// Writes new values for the same pattern (a value table: new codes and table).
    pub(crate) fn write_values(&self, a: &EllMatrix<T>) -> Result<()> {
        match &self.indices {
            EllIndices::CodedOffsets { words, first_row } => {
                let (new_words, table) = self.codes(a)?.into_arrays(a, *first_row as usize, self.values.len());
                words.write(&new_words)?;
                self.values.write(&table)
            }
            _ => self.values.write(a.values()),
        }
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.rows
    }
    /// Slots per row.
    pub fn width(&self) -> usize {
        self.width
    }
    /// The column encoding.
    pub fn indices(&self) -> &EllIndices {
        &self.indices
    }
    /// Value of each slot, column-major (padding holds 0); with a value table
    /// ([`EllIndices::CodedOffsets`]), the table the codes index.
    pub fn values(&self) -> &GpuVec<T> {
        &self.values
    }
    /// Whether columns are 16-bit diagonal offsets (with or without value codes).
    pub fn compact(&self) -> bool {
        !matches!(self.indices, EllIndices::Columns(_))
    }
    /// Whether values are 16-bit codes into a table ([`EllIndices::CodedOffsets`]).
    pub fn value_table(&self) -> bool {
        matches!(self.indices, EllIndices::CodedOffsets { .. })
    }
    pub(crate) fn device_bytes(&self) -> u64 {
        let indices = match &self.indices {
            EllIndices::Columns(columns) => columns.byte_len(),
            EllIndices::DiagonalOffsets { packed, .. } => packed.byte_len(),
            EllIndices::CodedOffsets { words, .. } => words.byte_len(),
        };
        indices + self.values.byte_len()
    }
}

/// Table entries a value-coded panel keeps, `distinct` of them in use: room for later
/// updates to bring more distinct values (see `write_values`), up to a quarter of its real
/// slots — room that costs at most what the codes save on those slots (2 bytes each in f32,
/// 6 in f64) — and at most [`MAX_VALUE_TABLE`]; at least one (padding reads code 0).
fn table_capacity<T: Scalar>(a: &EllMatrix<T>, distinct: usize) -> usize {
    distinct.max(a.nnz() / 4).clamp(1, MAX_VALUE_TABLE)
}

/// The distinct values of an ELL matrix's real slots (by bit pattern, so −0.0 and each NaN
/// keep theirs) and each slot's index among them, column-major; padding slots get code 0.
struct ValueCodes<T> {
    table: Vec<T>,
    codes: Vec<u16>,
}

impl<T: Scalar> ValueCodes<T> {
    /// The codes, or `None` when the real slots hold more than `limit` distinct values.
    fn of(a: &EllMatrix<T>, limit: usize) -> Option<Self> {
        let mut index: HashMap<u64, u16, FastHash> = HashMap::default();
        let mut table = Vec::new();
        let mut codes = vec![0u16; a.values().len()];
        // Neighbouring slots of a column (neighbouring rows) often hold the same value.
        let mut last: Option<(u64, u16)> = None;
        for (slot, (&column, &value)) in a.col_indices().iter().zip(a.values()).enumerate() {
            if column == ELL_PADDING {
                continue;
            }
            let bits = value_bits(value);
            let code = match last {
                Some((b, code)) if b == bits => code,
                _ => match index.get(&bits) {
                    Some(&code) => code,
                    None => {
                        if table.len() >= limit {
                            return None;
                        }
                        // limit ≤ MAX_VALUE_TABLE: every code fits 16 bits.
                        let code = table.len() as u16;
                        index.insert(bits, code);
                        table.push(value);
                        code
                    }
                },
            };
            last = Some((bits, code));
            codes[slot] = code;
        }
        Some(ValueCodes { table, codes })
    }

    /// The device arrays of rows `first_row..` of `a`: the words (offset and code per slot)
    /// and the table, padded to `capacity` entries.
    fn into_arrays(self, a: &EllMatrix<T>, first_row: usize, capacity: usize) -> (Vec<u32>, Vec<T>) {
        let mut table = self.table;
        table.resize(capacity, T::default());
        (pack_coded_offsets(a, first_row, &self.codes), table)
    }
}

/// Whether every entry of `a` lies within [`MAX_DIAGONAL_OFFSET`] of the diagonal.
pub(crate) fn within_diagonal_band<T: Scalar>(a: &CsrMatrix<T>) -> bool {
    (0..a.rows())
        .all(|i| a.row(i).0.iter().all(|&c| (c as i64 - i as i64).unsigned_abs() <= MAX_DIAGONAL_OFFSET as u64))
}

/// The 16-bit diagonal offsets of [`EllIndices::DiagonalOffsets`], packed two per word.
fn pack_diagonal_offsets<T: Scalar>(a: &EllMatrix<T>, first_row: usize, stride: usize) -> Vec<u32> {
    let (rows, columns) = (a.rows(), a.col_indices());
    let mut halves = vec![OFFSET_PADDING; a.width() * stride];
    for k in 0..a.width() {
        for i in 0..rows {
            let c = columns[k * rows + i];
            if c != ELL_PADDING {
                halves[k * stride + i] = diagonal_offset(c, first_row + i);
            }
        }
    }
    halves.chunks(2).map(|pair| pair[0] as u32 | (pair[1] as u32) << 16).collect()
}

/// A value's bit pattern, widened to 64 bits.
fn value_bits<T: Scalar>(value: T) -> u64 {
    let mut bits = [0u8; 8];
    let bytes = bytemuck::bytes_of(&value);
    bits[..bytes.len()].copy_from_slice(bytes);
    u64::from_le_bytes(bits)
}

/// The words of [`EllIndices::CodedOffsets`]: each slot's 16-bit diagonal offset (0x8000
/// pads) and, above it, its value's code.
fn pack_coded_offsets<T: Scalar>(a: &EllMatrix<T>, first_row: usize, codes: &[u16]) -> Vec<u32> {
    let rows = a.rows();
    a.col_indices()
        .iter()
        .zip(codes)
        .enumerate()
        .map(|(slot, (&c, &code))| {
            let offset =
                if c == ELL_PADDING { OFFSET_PADDING } else { diagonal_offset(c, first_row + slot % rows.max(1)) };
            offset as u32 | (code as u32) << 16
        })
        .collect()
}

/// `column − row` as the 16-bit two's complement the kernels read.
fn diagonal_offset(column: u32, row: usize) -> u16 {
    let offset = column as i64 - row as i64;
    debug_assert!(offset.unsigned_abs() <= MAX_DIAGONAL_OFFSET as u64);
    offset as i16 as u16
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::EllOptions;

    /// Codes index the table, padding slots get code 0 and the padding offset, real slots
    /// decode to their columns from a panel's first row, and the table keeps room.
    #[test]
    fn coded_slots_decode_to_their_columns_and_values() {
        // 5 rows, widths 0–3, three distinct values and a −0.0 beside 0.0.
        let csr = CsrMatrix::try_from_csr_data(
            5,
            6,
            vec![0, 2, 2, 5, 6, 8],
            vec![0, 3, 1, 2, 5, 4, 0, 5],
            vec![2.0f32, -1.0, 2.0, 0.0, -0.0, -1.0, 7.5, 2.0],
        )
        .unwrap();
        let a = EllMatrix::from_csr(&csr, &EllOptions::with_max_padding_ratio(f64::INFINITY)).unwrap();
        assert!(ValueCodes::of(&a, 4).is_none(), "five distinct bit patterns past a limit of 4");
        let codes = ValueCodes::of(&a, 5).unwrap();
        assert_eq!(codes.table.len(), 5);
        let first_row = 1000;
        let words = pack_coded_offsets(&a, first_row, &codes.codes);
        for (slot, (&column, &value)) in a.col_indices().iter().zip(a.values()).enumerate() {
            let (low, code) = (words[slot] & 0xffff, (words[slot] >> 16) as usize);
            if column == ELL_PADDING {
                assert_eq!((low, code), (OFFSET_PADDING as u32, 0), "slot {slot}: padding");
                continue;
            }
            let row = first_row + slot % a.rows();
            assert_eq!((row as i64 + low as u16 as i16 as i64) as u32, column, "slot {slot}: column");
            assert_eq!(codes.table[code].to_bits(), value.to_bits(), "slot {slot}: value");
        }
        assert_eq!(table_capacity(&a, 5), 5, "8 entries: room for the five in use");
        let tall = CsrMatrix::try_from_csr_data(40, 40, (0..=40).collect(), (0..40).collect(), vec![1.0f32; 40]);
        let tall = EllMatrix::from_csr(&tall.unwrap(), &EllOptions::default()).unwrap();
        assert_eq!(table_capacity(&tall, 1), 10, "40 entries: room for a quarter of them");
        assert_eq!(table_capacity(&tall, 12), 12, "never less than the values in use");
        let empty = EllMatrix::<f32>::from_csr(&CsrMatrix::zeros(3, 3).unwrap(), &EllOptions::default()).unwrap();
        let none = ValueCodes::of(&empty, 256).unwrap();
        assert!(none.table.is_empty() && none.codes.is_empty());
        assert_eq!(table_capacity(&empty, 0), 1, "padding reads code 0 of a table never empty");
    }
}
