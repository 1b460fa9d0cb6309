//! Validates every shader variant with naga and generates its typed Rust interface.
//!
//! Shaders live in `shaders/*.wgsl`, one compute stage per file. Two directives are
//! understood, each on a line of its own:
//! - `#import name` pulls in `shaders/shared/name.wgsl` (once per shader);
//! - `#ifdef FLAG` / `#ifndef FLAG` / `#else` / `#endif` select code per variant.
//!
//! Every combination of the flags a shader mentions is a variant, and each one is parsed and
//! validated here, so a broken shader fails `cargo build`. Two flags are set by the host, not
//! by the op: `SUBGROUP` (the context uses subgroup operations) and `F64` (the element type;
//! `shared/real.wgsl` aliases `Real` to f32 or f64 by it).
//!
//! For each shader, `$OUT_DIR/kernels.rs` gets a module named after the file with
//! - `Params<T>`: the `var<immediate> params` struct, field by field, written at the byte
//!   offsets naga computed for each element type (`Real` fields become `T`);
//! - `Bindings<'a, T>`: one named field per `@binding`, typed by its array element;
//! - `Flags` (the op's own `#ifdef` flags) and `Overrides` (the `override` constants, with
//!   their WGSL defaults);
//! - `Shader`, tying them together for the pipeline cache.
//!
//! Host code builds these structs by field name, so a field renamed, retyped, added or
//! dropped on one side only fails the build; variants of one shader must share one interface.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Flags the host derives from the context and the element type.
const SUBGROUP: &str = "SUBGROUP";
const F64: &str = "F64";

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("shaders");
    println!("cargo:rerun-if-changed=shaders");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("shaders/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "wgsl"))
        .collect();
    files.sort();
    for entry in std::fs::read_dir(root.join("shared")).expect("shaders/shared exists") {
        println!("cargo:rerun-if-changed={}", entry.unwrap().path().display());
    }

    let mut errors = Vec::new();
    let mut shaders = Vec::new();
    for (index, path) in files.iter().enumerate() {
        println!("cargo:rerun-if-changed={}", path.display());
        let name = path.file_stem().unwrap().to_str().unwrap().to_string();
        match build_shader(index, &name, path, &root) {
            Ok(shader) => shaders.push(shader),
            Err(e) => errors.push(format!("{name}: {e}")),
        }
    }
    let mut structs = BTreeMap::new();
    for shader in &shaders {
        for def in &shader.structs {
            // Shaders compiled for f32 only know one layout; the union is kept.
            let entry = structs.entry(def.name.clone()).or_insert_with(|| def.clone());
            let same_layouts = def.layouts.iter().all(|l| entry.layouts.iter().all(|e| e.0 != l.0 || e == l));
            if entry.fields != def.fields || !same_layouts {
                errors.push(format!("{}: struct {} differs from its other definitions", shader.name, def.name));
            }
            for layout in &def.layouts {
                if !entry.layouts.iter().any(|e| e.0 == layout.0) {
                    entry.layouts.push(layout.clone());
                    entry.layouts.sort_by_key(|l| l.0);
                }
            }
        }
    }
    if !errors.is_empty() {
        panic!("shader validation failed:\n\n{}", errors.join("\n\n"));
    }
    let out = emit(&shaders, &structs);
    let dest = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("kernels.rs");
    std::fs::write(dest, out).unwrap();
}

/// Element kinds of a variant, in `ElementKind` order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Element {
    F32,
    F64,
}

/// A scalar of an interface after merging the element variants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Leaf {
    U32,
    I32,
    F32,
    F64,
    /// f32 in the f32 variant, f64 in the f64 variant: the element type `T`.
    Real,
}

impl Leaf {
    fn rust(self) -> &'static str {
        match self {
            Leaf::U32 => "u32",
            Leaf::I32 => "i32",
            Leaf::F32 => "f32",
            Leaf::F64 => "f64",
            Leaf::Real => "T",
        }
    }
}

/// A field of the params struct or of a nested struct: a scalar or a struct by name.
#[derive(Debug, Clone, PartialEq)]
enum FieldType {
    Leaf(Leaf),
    Struct(String),
}

/// A struct as the host sees it: fields in order, per element kind the field offsets and size.
#[derive(Debug, Clone, PartialEq)]
struct StructDef {
    name: String,
    fields: Vec<(String, FieldType)>,
    /// (element, field offsets, span)
    layouts: Vec<(Element, Vec<u32>, u32)>,
}

impl StructDef {
    fn generic(&self, structs: &BTreeMap<String, StructDef>) -> bool {
        self.fields.iter().any(|(_, t)| match t {
            FieldType::Leaf(l) => *l == Leaf::Real,
            FieldType::Struct(s) => structs.get(s).is_some_and(|d| d.generic(structs)),
        })
    }
}

/// The array element of a storage binding.
#[derive(Debug, Clone, PartialEq)]
enum ElementType {
    Leaf(Leaf),
    Atomic(Leaf),
    Vector(Leaf, u32),
    Struct(String),
}

#[derive(Debug, Clone, PartialEq)]
struct BindingDef {
    binding: u32,
    name: String,
    writable: bool,
    element: ElementType,
}

#[derive(Debug, Clone, PartialEq)]
struct OverrideDef {
    name: String,
    rust_type: &'static str,
    default: String,
}

/// One variant as naga sees it, before the element variants are merged.
struct VariantInterface {
    params: Option<RawStruct>,
    bindings: Vec<(u32, String, bool, RawElement)>,
    overrides: Vec<(String, &'static str, String)>,
    workgroup_size: [u32; 3],
    size_override: Option<String>,
    entry_point: String,
    raw_structs: BTreeMap<String, RawStruct>,
}

/// A struct with concrete scalar types (one element variant).
#[derive(Debug, Clone, PartialEq)]
struct RawStruct {
    name: String,
    fields: Vec<(String, RawField, u32)>,
    span: u32,
}

#[derive(Debug, Clone, PartialEq)]
enum RawField {
    Scalar(Leaf),
    Struct(String),
}

#[derive(Debug, Clone, PartialEq)]
enum RawElement {
    Scalar(Leaf),
    Atomic(Leaf),
    Vector(Leaf, u32),
    Struct(String),
}

struct Variant {
    defines: Vec<String>,
    source: String,
    workgroup_size: [u32; 3],
    size_override: Option<String>,
    entry_point: String,
    immediate_size: u32,
}

struct Shader {
    index: usize,
    name: String,
    flags: Vec<String>,
    variants: Vec<Variant>,
    elements: Vec<Element>,
    params: Option<StructDef>,
    structs: Vec<StructDef>,
    bindings: Vec<BindingDef>,
    overrides: Vec<OverrideDef>,
}

fn build_shader(index: usize, name: &str, path: &Path, root: &Path) -> Result<Shader, String> {
    let text = expand_imports(path, root, &mut BTreeSet::new())?;
    let flags = flags_used(&text);
    let elements = if flags.iter().any(|f| f == F64) { vec![Element::F32, Element::F64] } else { vec![Element::F32] };
    let mut variants = Vec::new();
    // Interfaces by element kind, from the variant with no other flag set.
    let mut by_element: BTreeMap<Element, VariantInterface> = BTreeMap::new();
    // Every variant's interface must equal its element kind's.
    let mut signatures: BTreeMap<Element, String> = BTreeMap::new();
    let mut errors = Vec::new();
    for mask in 0..(1u32 << flags.len()) {
        let defined: Vec<&str> =
            flags.iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0).map(|(_, f)| f.as_str()).collect();
        let label = format!("[{}]", defined.join(","));
        let element = if defined.contains(&F64) { Element::F64 } else { Element::F32 };
        let source = match preprocess(&text, &defined) {
            Ok(s) => s,
            Err(e) => {
                errors.push(format!("{label}: {e}"));
                continue;
            }
        };
        match reflect(&source) {
            Ok(interface) => {
                // Overrides are set by name, and naga lists a module's in the order it first
                // uses them, which may differ between variants: compared as a set.
                let mut overrides = interface.overrides.clone();
                overrides.sort();
                let signature =
                    format!("{:?}{:?}{:?}{:?}", interface.params, interface.bindings, overrides, interface.raw_structs);
                match signatures.get(&element) {
                    None => {
                        signatures.insert(element, signature);
                    }
                    Some(s) if *s != signature => {
                        errors.push(format!("{label}: its interface differs from the variant without flags"))
                    }
                    Some(_) => {}
                }
                variants.push(Variant {
                    defines: defined.iter().map(|s| s.to_string()).collect(),
                    source,
                    workgroup_size: interface.workgroup_size,
                    size_override: interface.size_override.clone(),
                    entry_point: interface.entry_point.clone(),
                    immediate_size: interface.params.as_ref().map_or(0, |p| p.span.div_ceil(4) * 4),
                });
                by_element.entry(element).or_insert(interface);
            }
            Err(e) => errors.push(format!("{label}:\n{e}")),
        }
    }
    if !errors.is_empty() {
        return Err(errors.join("\n\n"));
    }
    let (params, structs, bindings, overrides) = merge(&by_element)?;
    Ok(Shader { index, name: name.to_string(), flags, variants, elements, params, structs, bindings, overrides })
}

/// Merges the f32 and f64 interfaces: a scalar that is f32 in one and f64 in the other is `T`.
type Merged = (Option<StructDef>, Vec<StructDef>, Vec<BindingDef>, Vec<OverrideDef>);

fn merge(by_element: &BTreeMap<Element, VariantInterface>) -> Result<Merged, String> {
    let f32 = &by_element[&Element::F32];
    let f64 = by_element.get(&Element::F64);
    let leaf = |a: Leaf, b: Option<Leaf>| -> Result<Leaf, String> {
        match (a, b) {
            (a, None) => Ok(a),
            (Leaf::F32, Some(Leaf::F64)) => Ok(Leaf::Real),
            (a, Some(b)) if a == b => Ok(a),
            (a, Some(b)) => Err(format!("a scalar is {a:?} in the f32 variant and {b:?} in the f64 variant")),
        }
    };
    let merge_struct = |s: &RawStruct, other: Option<&RawStruct>| -> Result<StructDef, String> {
        let mut fields = Vec::new();
        for (i, (name, field, _)) in s.fields.iter().enumerate() {
            let other_field = other.map(|o| &o.fields[i].1);
            let t = match (field, other_field) {
                (RawField::Scalar(a), Some(RawField::Scalar(b))) => FieldType::Leaf(leaf(*a, Some(*b))?),
                (RawField::Scalar(a), None) => FieldType::Leaf(*a),
                (RawField::Struct(a), None) => FieldType::Struct(a.clone()),
                (RawField::Struct(a), Some(RawField::Struct(b))) if a == b => FieldType::Struct(a.clone()),
                _ => return Err(format!("struct {}: field {name} changes kind between element types", s.name)),
            };
            fields.push((name.clone(), t));
        }
        let mut layouts = vec![(Element::F32, s.fields.iter().map(|f| f.2).collect(), s.span)];
        if let Some(o) = other {
            layouts.push((Element::F64, o.fields.iter().map(|f| f.2).collect(), o.span));
        }
        Ok(StructDef { name: s.name.clone(), fields, layouts })
    };
    let params = match &f32.params {
        Some(p) => Some(merge_struct(p, f64.and_then(|v| v.params.as_ref()))?),
        None => None,
    };
    let mut structs = Vec::new();
    for (name, s) in &f32.raw_structs {
        structs.push(merge_struct(s, f64.and_then(|v| v.raw_structs.get(name)))?);
    }
    let mut bindings = Vec::new();
    for (i, (binding, name, writable, element)) in f32.bindings.iter().enumerate() {
        let other = f64.map(|v| &v.bindings[i].3);
        let element = match (element, other) {
            (RawElement::Scalar(a), o) => ElementType::Leaf(leaf(*a, o.map(scalar_of))?),
            (RawElement::Atomic(a), o) => ElementType::Atomic(leaf(*a, o.map(scalar_of))?),
            (RawElement::Vector(a, n), o) => ElementType::Vector(leaf(*a, o.map(scalar_of))?, *n),
            (RawElement::Struct(s), _) => ElementType::Struct(s.clone()),
        };
        if matches!(element, ElementType::Atomic(Leaf::Real)) {
            return Err(format!("binding {name}: atomics are 32-bit; no atomic<Real>"));
        }
        bindings.push(BindingDef { binding: *binding, name: name.clone(), writable: *writable, element });
    }
    let overrides = f32
        .overrides
        .iter()
        .map(|(name, rust_type, default)| OverrideDef { name: name.clone(), rust_type, default: default.clone() })
        .collect();
    Ok((params, structs, bindings, overrides))
}

fn scalar_of(e: &RawElement) -> Leaf {
    match e {
        RawElement::Scalar(l) | RawElement::Atomic(l) | RawElement::Vector(l, _) => *l,
        RawElement::Struct(_) => Leaf::U32,
    }
}

/// Inlines `#import name` lines, each shared file at most once per shader.
fn expand_imports(path: &Path, root: &Path, seen: &mut BTreeSet<String>) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut out = String::new();
    for line in text.lines() {
        if let Some(name) = line.trim().strip_prefix("#import ") {
            let name = name.trim();
            if seen.insert(name.to_string()) {
                let shared = root.join("shared").join(format!("{name}.wgsl"));
                out.push_str(&expand_imports(&shared, root, seen)?);
            }
        } else {
            out.push_str(line);
            out.push('\n');
        }
    }
    Ok(out)
}

fn flags_used(text: &str) -> Vec<String> {
    let mut flags = BTreeSet::new();
    for line in text.lines() {
        let t = line.trim();
        if let Some(f) = t.strip_prefix("#ifdef ").or_else(|| t.strip_prefix("#ifndef ")) {
            flags.insert(f.trim().to_string());
        }
    }
    flags.into_iter().collect()
}

/// Evaluates the conditional directives. Dropped lines become blank so that naga's line
/// numbers still point into the expanded file.
fn preprocess(text: &str, defined: &[&str]) -> Result<String, String> {
    // Each open block: (this branch active, parent active, seen #else).
    let mut stack: Vec<(bool, bool, bool)> = Vec::new();
    let mut out = String::new();
    for (n, line) in text.lines().enumerate() {
        let t = line.trim();
        let active = stack.last().is_none_or(|s| s.0);
        if let Some(f) = t.strip_prefix("#ifdef ") {
            stack.push((active && defined.contains(&f.trim()), active, false));
        } else if let Some(f) = t.strip_prefix("#ifndef ") {
            stack.push((active && !defined.contains(&f.trim()), active, false));
        } else if t == "#else" {
            let top = stack.last_mut().ok_or(format!("line {}: #else without #ifdef", n + 1))?;
            if top.2 {
                return Err(format!("line {}: second #else", n + 1));
            }
            *top = (top.1 && !top.0, top.1, true);
        } else if t == "#endif" {
            stack.pop().ok_or(format!("line {}: #endif without #ifdef", n + 1))?;
        } else if t.starts_with('#') {
            return Err(format!("line {}: unknown directive {t:?}", n + 1));
        } else if active {
            out.push_str(line);
        }
        out.push('\n');
    }
    if !stack.is_empty() {
        return Err("unterminated #ifdef".into());
    }
    Ok(out)
}

fn scalar_leaf(s: naga::Scalar) -> Result<Leaf, String> {
    Ok(match (s.kind, s.width) {
        (naga::ScalarKind::Uint, 4) => Leaf::U32,
        (naga::ScalarKind::Sint, 4) => Leaf::I32,
        (naga::ScalarKind::Float, 4) => Leaf::F32,
        (naga::ScalarKind::Float, 8) => Leaf::F64,
        other => return Err(format!("unsupported scalar {other:?}")),
    })
}

/// Reflects a struct type (and the structs nested in it) into `structs`.
fn reflect_struct(
    module: &naga::Module,
    ty: naga::Handle<naga::Type>,
    structs: &mut BTreeMap<String, RawStruct>,
) -> Result<RawStruct, String> {
    let t = &module.types[ty];
    let name = t.name.clone().ok_or("anonymous struct")?;
    let naga::TypeInner::Struct { members, span } = &t.inner else {
        return Err(format!("{name} is not a struct"));
    };
    let mut fields = Vec::new();
    for m in members {
        let field_name = m.name.clone().ok_or("unnamed struct member")?;
        let field = match &module.types[m.ty].inner {
            naga::TypeInner::Scalar(s) => RawField::Scalar(scalar_leaf(*s)?),
            naga::TypeInner::Struct { .. } => {
                let nested = reflect_struct(module, m.ty, structs)?;
                let nested_name = nested.name.clone();
                structs.insert(nested_name.clone(), nested);
                RawField::Struct(nested_name)
            }
            other => {
                return Err(format!(
                    "{name}.{field_name}: host-visible structs hold scalars and structs, not {other:?}"
                ))
            }
        };
        fields.push((field_name, field, m.offset));
    }
    Ok(RawStruct { name, fields, span: *span })
}

/// Parses and validates one variant and reflects its interface.
fn reflect(source: &str) -> Result<VariantInterface, String> {
    let module = naga::front::wgsl::parse_str(source).map_err(|e| e.emit_to_string(source))?;
    let mut validator =
        naga::valid::Validator::new(naga::valid::ValidationFlags::all(), naga::valid::Capabilities::all());
    validator.validate(&module).map_err(|e| e.emit_to_string(source))?;
    let entry = match module.entry_points.as_slice() {
        [e] if e.stage == naga::ShaderStage::Compute => e,
        _ => return Err("a shader file must have exactly one @compute entry point".into()),
    };

    let mut raw_structs = BTreeMap::new();
    let mut params = None;
    let mut bindings = Vec::new();
    for (_, var) in module.global_variables.iter() {
        let name = var.name.clone().unwrap_or_default();
        if var.space == naga::AddressSpace::Immediate {
            if name != "params" {
                return Err(format!("the immediate data must be `var<immediate> params`, not {name}"));
            }
            params = Some(reflect_struct(&module, var.ty, &mut raw_structs)?);
            continue;
        }
        let Some(binding) = &var.binding else { continue };
        if binding.group != 0 {
            return Err(format!("{name}: only @group(0) is used"));
        }
        let writable = match var.space {
            naga::AddressSpace::Storage { access } => access.contains(naga::StorageAccess::STORE),
            other => {
                return Err(format!("{name}: bindings are storage arrays (parameters go in immediates), not {other:?}"))
            }
        };
        let naga::TypeInner::Array { base, .. } = &module.types[var.ty].inner else {
            return Err(format!("{name}: a storage binding must be a runtime-sized array"));
        };
        let element = match &module.types[*base].inner {
            naga::TypeInner::Scalar(s) => RawElement::Scalar(scalar_leaf(*s)?),
            naga::TypeInner::Atomic(s) => RawElement::Atomic(scalar_leaf(*s)?),
            naga::TypeInner::Vector { size, scalar } => {
                let n = match size {
                    naga::VectorSize::Bi => 2,
                    naga::VectorSize::Quad => 4,
                    naga::VectorSize::Tri => return Err(format!("{name}: vec3 arrays pad; use vec4")),
                };
                RawElement::Vector(scalar_leaf(*scalar)?, n)
            }
            naga::TypeInner::Struct { .. } => {
                let s = reflect_struct(&module, *base, &mut raw_structs)?;
                let struct_name = s.name.clone();
                raw_structs.insert(struct_name.clone(), s);
                RawElement::Struct(struct_name)
            }
            other => return Err(format!("{name}: unsupported array element {other:?}")),
        };
        bindings.push((binding.binding, name, writable, element));
    }
    bindings.sort_by_key(|b| b.0);
    for (i, b) in bindings.iter().enumerate() {
        if b.0 != i as u32 {
            return Err(format!("bindings must be numbered 0, 1, 2, … without gaps; found {} at position {i}", b.0));
        }
    }

    // Overrides with their literal defaults (every one needs a default the host can name).
    let mut overrides = Vec::new();
    // Unnamed overrides are naga's own (override-sized array lengths); the host sets none.
    for (_, o) in module.overrides.iter().filter(|(_, o)| o.name.is_some()) {
        let name = o.name.clone().unwrap_or_default();
        let (rust_type, default) = match o.init.map(|h| &module.global_expressions[h]) {
            Some(naga::Expression::Literal(naga::Literal::U32(v))) => ("u32", format!("{v}")),
            Some(naga::Expression::Literal(naga::Literal::Bool(v))) => ("bool", format!("{v}")),
            _ => return Err(format!("override {name} needs a u32 or bool literal default")),
        };
        overrides.push((name, rust_type, default));
    }
    // A workgroup size set by an override is resolved by the host from the constants.
    let size_override = entry.workgroup_size_overrides.and_then(|o| o[0]).map(|h| match module.global_expressions[h] {
        naga::Expression::Override(o) => module.overrides[o].name.clone().unwrap_or_default(),
        _ => String::new(),
    });
    if entry.workgroup_size_overrides.is_some_and(|o| o[1].is_some() || o[2].is_some()) {
        return Err("only the x workgroup dimension may be an override".into());
    }
    Ok(VariantInterface {
        params,
        bindings,
        overrides,
        workgroup_size: entry.workgroup_size,
        size_override,
        entry_point: entry.name.clone(),
        raw_structs,
    })
}

fn snake(name: &str) -> String {
    name.to_lowercase()
}

fn element_variant(e: Element) -> &'static str {
    match e {
        Element::F32 => "F32",
        Element::F64 => "F64",
    }
}

/// The Rust type of a struct by name (`Name<T>` when it holds `Real`).
fn struct_type(name: &str, structs: &BTreeMap<String, StructDef>, prefix: &str) -> String {
    let generic = structs.get(name).is_some_and(|d| d.generic(structs));
    format!("{prefix}{name}{}", if generic { "<T>" } else { "" })
}

/// Statements writing every scalar of `def` at `base` + its offsets, for one element kind.
fn write_fields(
    out: &mut String,
    def: &StructDef,
    element: Element,
    path: &str,
    base: u32,
    structs: &BTreeMap<String, StructDef>,
) {
    let offsets = &def.layouts.iter().find(|l| l.0 == element).unwrap_or(&def.layouts[0]).1;
    for ((name, t), offset) in def.fields.iter().zip(offsets) {
        let at = base + offset;
        match t {
            FieldType::Leaf(_) => {
                let _ = writeln!(out, "                out.put({at}, {path}.{name});");
            }
            FieldType::Struct(s) => write_fields(out, &structs[s], element, &format!("{path}.{name}"), at, structs),
        }
    }
}

fn emit_struct(out: &mut String, def: &StructDef, structs: &BTreeMap<String, StructDef>, prefix: &str, doc: &str) {
    let generic = def.generic(structs);
    // Structs of 32-bit scalars have no padding: the host can read and write them as bytes.
    let plain = !generic
        && def.fields.iter().all(|(_, t)| matches!(t, FieldType::Leaf(Leaf::U32 | Leaf::I32 | Leaf::F32)))
        && def.layouts.iter().all(|l| l.2 as usize == 4 * def.fields.len());
    let _ = writeln!(out, "    /// {doc}");
    if plain {
        let _ = writeln!(
            out,
            "    #[repr(C)]\n    #[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]"
        );
    } else {
        let _ = writeln!(out, "    #[derive(Clone, Copy, Debug, Default, PartialEq)]");
    }
    let _ = writeln!(out, "    pub struct {}{} {{", def.name, if generic { "<T: Scalar>" } else { "" });
    for (name, t) in &def.fields {
        let ty = match t {
            FieldType::Leaf(l) => l.rust().to_string(),
            FieldType::Struct(s) => struct_type(s, structs, prefix),
        };
        let _ = writeln!(out, "        pub {name}: {ty},");
    }
    let _ = writeln!(out, "    }}");
}

fn emit(shaders: &[Shader], structs: &BTreeMap<String, StructDef>) -> String {
    let mut out = String::from("// @generated by build.rs from shaders/*.wgsl: do not edit.\n\n");

    // The registry the pipeline cache reads.
    out.push_str("/// Every shader in `shaders/`, in file-name order.\npub static SHADERS: &[ShaderInfo] = &[\n");
    for s in shaders {
        let _ = writeln!(out, "    ShaderInfo {{\n        name: {:?},\n        flags: &{:?},", s.name, s.flags);
        let bindings: Vec<String> = s
            .bindings
            .iter()
            .map(|b| format!("BindingInfo {{ binding: {}, name: {:?}, writable: {} }}", b.binding, b.name, b.writable))
            .collect();
        let _ = writeln!(out, "        bindings: &[{}],", bindings.join(", "));
        let overrides: Vec<String> = s
            .overrides
            .iter()
            .map(|o| format!("OverrideInfo {{ name: {:?}, default: {:?} }}", o.name, o.default))
            .collect();
        let _ = writeln!(out, "        overrides: &[{}],", overrides.join(", "));
        out.push_str("        variants: &[\n");
        for v in &s.variants {
            let _ = writeln!(
                out,
                "            ShaderVariant {{ defines: &{:?}, source: {:?}, workgroup_size: {:?}, workgroup_size_override: {:?}, entry_point: {:?}, immediate_size: {} }},",
                v.defines, v.source, v.workgroup_size, v.size_override, v.entry_point, v.immediate_size
            );
        }
        out.push_str("        ],\n    },\n");
    }
    out.push_str("];\n\n");

    // Structs shared by shaders: params pieces and array elements.
    out.push_str("/// Structs of the shader interfaces, shared by every shader that names them.\npub mod structs {\n    #![allow(missing_docs)]\n    use crate::kernel::spec::*;\n\n");
    for def in structs.values() {
        emit_struct(&mut out, def, structs, "", &format!("`struct {}` of the shaders.", def.name));
        let generic = def.generic(structs);
        let (params, ty) = if generic {
            ("<T: Scalar>".to_string(), format!("{}<T>", def.name))
        } else {
            (String::new(), def.name.clone())
        };
        let strides: Vec<String> =
            def.layouts.iter().map(|(e, _, span)| format!("ElementKind::{} => {span}", element_variant(*e))).collect();
        let stride = if generic {
            format!("match T::KIND {{ {} }}", strides.join(", "))
        } else {
            format!("{}", def.layouts[0].2)
        };
        let _ = writeln!(out, "    impl{params} Stored for {ty} {{\n        fn stride() -> u64 {{\n            {stride}\n        }}\n    }}\n");
    }
    out.push_str("}\n\n");

    for s in shaders {
        emit_shader(&mut out, s, structs);
    }
    out
}

fn emit_shader(out: &mut String, s: &Shader, structs: &BTreeMap<String, StructDef>) {
    let module = snake(&s.name);
    let _ = writeln!(out, "/// The interface of `shaders/{}.wgsl`.", s.name);
    let _ = writeln!(
        out,
        "pub mod {module} {{\n    #![allow(missing_docs, unused_mut, clippy::all)]\n    use crate::kernel::spec::*;\n"
    );
    let generic_element = s.elements.contains(&Element::F64);

    // Params.
    let params_generic = s.params.as_ref().is_some_and(|p| p.generic(structs));
    match &s.params {
        Some(p) => {
            emit_struct(out, p, structs, "super::structs::", "`var<immediate> params`.");
            let (g, ty) = if params_generic { ("<T: Scalar>", "Params<T>") } else { ("", "Params") };
            let _ =
                writeln!(out, "    impl{g} Immediate for {ty} {{\n        fn write(&self, out: &mut ImmediateData) {{");
            if params_generic {
                let _ = writeln!(out, "            match T::KIND {{");
                for layout in &p.layouts {
                    let _ = writeln!(out, "            ElementKind::{} => {{", element_variant(layout.0));
                    let _ = writeln!(out, "                out.resize({});", layout.2.div_ceil(4) * 4);
                    write_fields(out, p, layout.0, "self", 0, structs);
                    out.push_str("            }\n");
                }
                out.push_str("            }\n");
            } else {
                let _ =
                    writeln!(out, "            {{\n                out.resize({});", p.layouts[0].2.div_ceil(4) * 4);
                write_fields(out, p, p.layouts[0].0, "self", 0, structs);
                out.push_str("            }\n");
            }
            out.push_str("        }\n    }\n\n");
        }
        None => {
            out.push_str("    /// This shader has no immediate data.\n    #[derive(Clone, Copy, Debug, Default, PartialEq)]\n    pub struct Params;\n");
            out.push_str("    impl Immediate for Params {\n        fn write(&self, out: &mut ImmediateData) {\n            out.resize(0);\n        }\n    }\n\n");
        }
    }

    // Flags: every flag but the host-derived ones, as a bool.
    let own_flags: Vec<&String> = s.flags.iter().filter(|f| *f != SUBGROUP && *f != F64).collect();
    out.push_str("    /// The shader's own `#ifdef` flags.\n    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]\n    pub struct Flags {\n");
    for f in &own_flags {
        let _ = writeln!(out, "        pub {}: bool,", snake(f));
    }
    out.push_str("    }\n");
    out.push_str("    impl FlagSet for Flags {\n        fn variant(&self, subgroups: bool, element: ElementKind) -> usize {\n            let mut mask = 0usize;\n");
    for (bit, f) in s.flags.iter().enumerate() {
        let cond = match f.as_str() {
            SUBGROUP => "subgroups".to_string(),
            F64 => "element == ElementKind::F64".to_string(),
            other => format!("self.{}", snake(other)),
        };
        let _ = writeln!(out, "            if {cond} {{ mask |= 1 << {bit}; }}");
    }
    if !generic_element {
        out.push_str("            let _ = element;\n");
    }
    if !s.flags.iter().any(|f| f == SUBGROUP) {
        out.push_str("            let _ = subgroups;\n");
    }
    out.push_str("            mask\n        }\n    }\n\n");

    // Overrides.
    out.push_str("    /// The shader's `override` constants; `Default` gives the WGSL defaults.\n    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]\n    pub struct Overrides {\n");
    for o in &s.overrides {
        let _ = writeln!(out, "        pub {}: {},", snake(&o.name), o.rust_type);
    }
    out.push_str("    }\n    impl Default for Overrides {\n        fn default() -> Self {\n            Overrides {\n");
    for o in &s.overrides {
        let _ = writeln!(out, "                {}: {},", snake(&o.name), o.default);
    }
    out.push_str("            }\n        }\n    }\n");
    let size = match &s.variants[0].size_override {
        Some(name) => format!("self.{}", snake(name)),
        None => format!("{}", s.variants[0].workgroup_size[0]),
    };
    out.push_str("    impl OverrideSet for Overrides {\n        fn constants(&self) -> Vec<(&'static str, f64)> {\n            vec![");
    let constants: Vec<String> = s
        .overrides
        .iter()
        .map(|o| {
            let value = if o.rust_type == "bool" {
                format!("if self.{} {{ 1.0 }} else {{ 0.0 }}", snake(&o.name))
            } else {
                format!("self.{} as f64", snake(&o.name))
            };
            format!("({:?}, {value})", o.name)
        })
        .collect();
    out.push_str(&constants.join(", "));
    let _ = writeln!(
        out,
        "]\n        }}\n        fn workgroup_size(&self) -> u32 {{\n            {size}\n        }}\n    }}\n"
    );

    // Bindings.
    let element_rust = |e: &ElementType| -> String {
        match e {
            ElementType::Leaf(l) | ElementType::Atomic(l) => l.rust().to_string(),
            ElementType::Vector(l, n) => format!("[{}; {n}]", l.rust()),
            ElementType::Struct(name) => struct_type(name, structs, "super::structs::"),
        }
    };
    let bindings_generic = s.bindings.iter().any(|b| element_rust(&b.element).contains('T'));
    let (g, gu) = if bindings_generic { ("<'a, T: Scalar>", "<'a, T>") } else { ("<'a>", "<'a>") };
    out.push_str("    /// The shader's storage bindings, by name.\n    #[derive(Clone, Copy)]\n");
    let _ = writeln!(out, "    pub struct Bindings{g} {{");
    for b in &s.bindings {
        let access = if b.writable { "read_write" } else { "read" };
        let _ = writeln!(out, "        /// `@binding({}) var<storage, {access}> {}`", b.binding, b.name);
        let _ = writeln!(out, "        pub {}: Bind<'a, {}>,", b.name, element_rust(&b.element));
    }
    if s.bindings.is_empty() {
        out.push_str("        pub _none: std::marker::PhantomData<&'a ()>,\n");
    }
    out.push_str("    }\n");
    let _ = writeln!(out, "    impl{g} BindingSet<'a> for Bindings{gu} {{\n        fn entries(&self) -> Vec<BindEntry<'a>> {{\n            vec![");
    let entries: Vec<String> =
        s.bindings.iter().map(|b| format!("self.{}.entry({:?}, {})", b.name, b.name, b.writable)).collect();
    out.push_str(&entries.join(", "));
    out.push_str("]\n        }\n    }\n\n");

    // The shader.
    let params_ty = if params_generic { "Params<T>" } else { "Params" };
    let bindings_ty = if bindings_generic { "Bindings<'a, T>" } else { "Bindings<'a>" };
    let _ = writeln!(
        out,
        "    /// `shaders/{name}.wgsl`.\n    pub struct Shader;\n    impl ShaderSpec for Shader {{\n        const ID: ShaderId = ShaderId({index});\n        const ELEMENT_GENERIC: bool = {generic_element};\n        type Params<T: Scalar> = {params_ty};\n        type Bindings<'a, T: Scalar> = {bindings_ty};\n        type Flags = Flags;\n        type Overrides = Overrides;\n    }}\n}}\n",
        name = s.name,
        index = s.index,
    );
}
