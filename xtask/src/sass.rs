//! `cargo xtask sass CACHE OUT`: the machine code NVIDIA's Vulkan driver compiled our kernels
//! to, read back from the driver's shader disk cache. The driver reports no internal
//! representation through `VK_KHR_pipeline_executable_properties` (benches/NOTES.md, session
//! 42), but it keeps every pipeline it compiles in its cache (`GLCache/…/*.toc` and `*.bin`
//! under `__GL_SHADER_DISK_CACHE_PATH`), and each entry holds the pipeline's SASS as a
//! section of an "NVuc" object. This writes each object's code section (`objectNNN.code`),
//! disassembles it with NVIDIA's `nvdisasm` where one is found (`objectNNN.sass`), and prints
//! a line per object: instructions, registers, local-memory and barrier instructions, calls.
//! benches/NOTES.md (session 60) says how to run it against the lent GPU. `nvdisasm` comes
//! with CUDA (the lent GPU machine: /usr/local/cuda-13.0/bin); elsewhere from the wheel
//! `pip download --no-deps nvidia-cuda-nvdisasm` (nvidia/cu13/bin/nvdisasm inside).
//!
//! The cache's layout, as observed on driver 580 (little-endian words):
//! - `.toc`: a 32-byte header ("CDVN" …), then 24-byte entries; an entry's words 4 and 5 are
//!   its section's offset in the `.bin` and the section's size.
//! - `.bin` section: a 36-byte header (word 0 the magic 0x9846A19D, word 7 the section's
//!   size, word 8 the unpacked size), then the packed object (size − 4 bytes): a zstd frame,
//!   or raw where the sizes agree.
//! - the object: "NVuc" (after a prefix such as "NVDANVVM" on Vulkan pipelines), its word 2's
//!   low half the number of sections, then from word 8 a table of 8 words a section (type,
//!   length, offset, …). Type 1 is the code, 16 bytes an instruction; type 3 the registers
//!   (allocated, requested).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

const TOC_HEADER: usize = 0x20;
const TOC_ENTRY: usize = 0x18;
const SECTION_HEADER: usize = 0x24;
const SECTION_MAGIC: u32 = 0x9846_A19D;
const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
const CODE: u32 = 1;
const REGISTERS: u32 = 3;

pub const USAGE: &str = "sass CACHE OUT [--arch SM90] [--nvdisasm PATH]
                           NVIDIA's compiled kernels from a driver shader cache (run the
                           bench with __GL_SHADER_DISK_CACHE_PATH=CACHE first): each one's
                           code and, with nvdisasm, its SASS into OUT, and a line each";

pub fn run(args: &[String]) -> Result<(), String> {
    let mut positional = Vec::new();
    let mut arch = "SM90".to_string();
    let mut nvdisasm = None;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--arch" => arch = rest.next().ok_or("--arch needs a value (SM90)")?.clone(),
            "--nvdisasm" => nvdisasm = Some(PathBuf::from(rest.next().ok_or("--nvdisasm needs a path")?)),
            _ => positional.push(arg),
        }
    }
    let [cache, out] = positional[..] else {
        return Err(format!("usage: cargo xtask {USAGE}"));
    };
    let nvdisasm = nvdisasm.or_else(find_nvdisasm);
    if nvdisasm.is_none() {
        eprintln!("xtask: no nvdisasm (PATH, /usr/local/cuda*/bin, or --nvdisasm): writing code sections only");
    }
    let out = Path::new(out);
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut tocs = Vec::new();
    find_tocs(Path::new(cache), &mut tocs)?;
    if tocs.is_empty() {
        return Err(format!("no .toc file under {cache}"));
    }
    let mut count = 0;
    for toc in tocs {
        for object in objects(&toc)? {
            let Some(nvuc) = Nvuc::parse(&object) else { continue };
            let Some(code) = nvuc.section(CODE) else { continue };
            let name = format!("object{count:03}");
            count += 1;
            std::fs::write(out.join(format!("{name}.code")), code).map_err(|e| format!("{name}: {e}"))?;
            let registers = nvuc.section(REGISTERS).and_then(|r| word(r, 0)).map_or("-".into(), |r| r.to_string());
            let sass = match &nvdisasm {
                Some(tool) => {
                    disassemble(tool, &arch, &out.join(format!("{name}.code")), &out.join(format!("{name}.sass")))?
                }
                None => String::new(),
            };
            let counted = |ops: &[&str]| sass.lines().filter(|l| ops.iter().any(|op| l.contains(op))).count();
            println!(
                "{name}  instructions {:>6}  registers {registers:>3}  local {:>3}  barriers {:>3}  calls {:>3}",
                code.len() / 16,
                counted(&["STL", "LDL"]),
                counted(&["BAR.SYNC"]),
                counted(&["CALL."]),
            );
        }
    }
    if count == 0 {
        return Err("no compiled object in the cache".into());
    }
    Ok(())
}

fn find_tocs(dir: &Path, found: &mut Vec<PathBuf>) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            find_tocs(&path, found)?;
        } else if path.extension().is_some_and(|e| e == "toc") {
            found.push(path);
        }
    }
    Ok(())
}

fn word(bytes: &[u8], index: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(4 * index..4 * index + 4)?.try_into().ok()?))
}

/// The unpacked objects of one cache file pair, in the order of its table.
fn objects(toc_path: &Path) -> Result<Vec<Vec<u8>>, String> {
    let read = |p: &Path| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
    let toc = read(toc_path)?;
    let bin = read(&toc_path.with_extension("bin"))?;
    if !toc.starts_with(b"CDVN") || toc.len() < TOC_HEADER || !(toc.len() - TOC_HEADER).is_multiple_of(TOC_ENTRY) {
        return Err(format!("{}: not a shader cache table", toc_path.display()));
    }
    let mut objects = Vec::new();
    for entry in toc[TOC_HEADER..].chunks(TOC_ENTRY) {
        let (Some(offset), Some(size)) = (word(entry, 4), word(entry, 5)) else { continue };
        let (offset, size) = (offset as usize, size as usize);
        let Some(header) = bin.get(offset..offset + SECTION_HEADER) else { continue };
        if word(header, 0) != Some(SECTION_MAGIC) || word(header, 7) != Some(size as u32) || size < 4 {
            continue;
        }
        let unpacked = word(header, 8).unwrap_or(0) as usize;
        let Some(packed) = bin.get(offset + SECTION_HEADER..offset + SECTION_HEADER + size - 4) else { continue };
        if packed.starts_with(&ZSTD_MAGIC) {
            let mut object = Vec::with_capacity(unpacked);
            let mut source = packed;
            let mut decoder = ruzstd::decoding::StreamingDecoder::new(&mut source)
                .map_err(|e| format!("{}: zstd: {e}", toc_path.display()))?;
            decoder.read_to_end(&mut object).map_err(|e| format!("{}: zstd: {e}", toc_path.display()))?;
            objects.push(object);
        } else if packed.len() == unpacked {
            objects.push(packed.to_vec());
        }
    }
    Ok(objects)
}

/// An "NVuc" object: its bytes from the magic on.
struct Nvuc<'a>(&'a [u8]);

impl<'a> Nvuc<'a> {
    fn parse(object: &'a [u8]) -> Option<Self> {
        // Vulkan pipelines' objects carry a short prefix ("NVDANVVM") before the magic.
        let start = object.windows(4).take(16).position(|w| w == b"NVuc")?;
        Some(Nvuc(&object[start..]))
    }

    /// The first section of this type.
    fn section(&self, kind: u32) -> Option<&'a [u8]> {
        let sections = word(self.0, 2)? & 0xFFFF;
        (0..sections as usize).find_map(|i| {
            let at = 8 + 8 * i;
            if word(self.0, at)? != kind {
                return None;
            }
            let (length, offset) = (word(self.0, at + 1)? as usize, word(self.0, at + 2)? as usize);
            self.0.get(offset..offset + length)
        })
    }
}

fn find_nvdisasm() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join("nvdisasm"));
    let cuda = std::fs::read_dir("/usr/local")
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("cuda"))
        .map(|e| e.path().join("bin/nvdisasm"));
    on_path.chain(cuda).find(|p| p.is_file())
}

/// Runs `nvdisasm --binary ARCH code`, writes its text to `sass` and returns it.
fn disassemble(tool: &Path, arch: &str, code: &Path, sass: &Path) -> Result<String, String> {
    let output = Command::new(tool)
        .args(["--binary", arch])
        .arg(code)
        .output()
        .map_err(|e| format!("{}: {e}", tool.display()))?;
    if !output.status.success() {
        return Err(format!("nvdisasm on {}: {}", code.display(), String::from_utf8_lossy(&output.stderr)));
    }
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    std::fs::write(sass, &text).map_err(|e| format!("{}: {e}", sass.display()))?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An NVuc object behind Vulkan's prefix: a code section of `instructions` 16-byte words and
    /// a register section.
    fn object(instructions: usize, registers: u32) -> Vec<u8> {
        let code: Vec<u8> = (0..16 * instructions).map(|i| i as u8).collect();
        let table = 8 * 4 + 2 * 8 * 4;
        let mut nvuc = b"NVuc".to_vec();
        nvuc.extend([0u8; 4]);
        nvuc.extend(2u32.to_le_bytes());
        nvuc.resize(8 * 4, 0);
        for (kind, length, offset) in [(REGISTERS, 8, table), (CODE, code.len(), table + 8)] {
            let mut entry = [0u32; 8];
            entry[..3].copy_from_slice(&[kind, length as u32, offset as u32]);
            nvuc.extend(entry.iter().flat_map(|w| w.to_le_bytes()));
        }
        nvuc.extend(registers.to_le_bytes());
        nvuc.extend(255u32.to_le_bytes());
        nvuc.extend(&code);
        [b"NVDANVVM".as_slice(), &nvuc].concat()
    }

    /// A cache pair holding `objects`, the first zstd-packed, the rest raw.
    fn cache(dir: &Path, objects: &[Vec<u8>]) {
        let mut toc = b"CDVN".to_vec();
        toc.resize(TOC_HEADER, 0);
        let mut bin = b"CDVN".to_vec();
        bin.resize(0x20, 0);
        for (i, object) in objects.iter().enumerate() {
            let packed = if i == 0 {
                ruzstd::encoding::compress_to_vec(object.as_slice(), ruzstd::encoding::CompressionLevel::Fastest)
            } else {
                object.clone()
            };
            let size = packed.len() as u32 + 4;
            let mut header = [0u32; 9];
            header[0] = SECTION_MAGIC;
            header[7] = size;
            header[8] = object.len() as u32;
            let mut entry = [0u32; 6];
            entry[4] = bin.len() as u32;
            entry[5] = size;
            toc.extend(entry.iter().flat_map(|w| w.to_le_bytes()));
            bin.extend(header.iter().flat_map(|w| w.to_le_bytes()));
            bin.extend(&packed);
        }
        std::fs::create_dir_all(dir.join("GLCache/a/b")).unwrap();
        std::fs::write(dir.join("GLCache/a/b/c.toc"), toc).unwrap();
        std::fs::write(dir.join("GLCache/a/b/c.bin"), bin).unwrap();
    }

    #[test]
    fn reads_the_code_and_registers_of_packed_and_raw_objects() {
        let dir = std::env::temp_dir().join(format!("xtask-sass-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let written = [object(5, 64), object(3, 122)];
        cache(&dir, &written);
        let mut tocs = Vec::new();
        find_tocs(&dir, &mut tocs).unwrap();
        assert_eq!(tocs.len(), 1);
        let read = objects(&tocs[0]).unwrap();
        assert_eq!(read, written);
        for (object, (instructions, registers)) in read.iter().zip([(5, 64), (3, 122)]) {
            let nvuc = Nvuc::parse(object).unwrap();
            let code = nvuc.section(CODE).unwrap();
            assert_eq!(code.len(), 16 * instructions);
            assert_eq!(code[17], 17);
            assert_eq!(word(nvuc.section(REGISTERS).unwrap(), 0), Some(registers));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
