//! Every shader variant parses, validates and translates to SPIR-V (Vulkan), MSL (Metal,
//! f32 variants: Metal has no f64) and HLSL (DX12); the reflected interface is pinned by a
//! snapshot.

use std::fmt::Write;

use naga::back::{hlsl, msl, spv};
use naga::valid::{Capabilities, ValidationFlags, Validator};
use wgsparse::shaders::SHADERS;

fn translate(name: &str, source: &str, f64: bool) -> Result<(), String> {
    let module = naga::front::wgsl::parse_str(source).map_err(|e| e.emit_to_string(source))?;
    let info = Validator::new(ValidationFlags::all(), Capabilities::all())
        .validate(&module)
        .map_err(|e| e.emit_to_string(source))?;
    let entry = &module.entry_points[0];
    let entry_point = Some((entry.stage, entry.name.as_str()));
    // Backends need the override constants resolved: use the defaults.
    let (module, info) =
        naga::back::pipeline_constants::process_overrides(&module, &info, entry_point, &Default::default())
            .map_err(|e| format!("{name}: overrides: {e}"))?;

    let spv_options = spv::Options { lang_version: (1, 3), ..Default::default() };
    let spv_pipeline = spv::PipelineOptions { shader_stage: entry.stage, entry_point: entry.name.clone() };
    spv::write_vec(&module, &info, &spv_options, Some(&spv_pipeline)).map_err(|e| format!("{name}: SPIR-V: {e}"))?;

    if !f64 {
        let msl_options = msl::Options { lang_version: (2, 4), fake_missing_bindings: true, ..Default::default() };
        let msl_pipeline =
            msl::PipelineOptions { entry_point: Some((entry.stage, entry.name.clone())), ..Default::default() };
        msl::write_string(&module, &info, &msl_options, &msl_pipeline).map_err(|e| format!("{name}: MSL: {e}"))?;
    }

    // Immediate data becomes a root constant buffer on DX12 (wgpu picks the register).
    let immediates_target = hlsl::BindTarget { space: 0, register: 0, ..Default::default() };
    let hlsl_options = hlsl::Options {
        shader_model: hlsl::ShaderModel::V6_0,
        immediates_target: Some(immediates_target),
        ..Default::default()
    };
    let hlsl_pipeline = hlsl::PipelineOptions { entry_point: Some((entry.stage, entry.name.clone())) };
    let mut out = String::new();
    hlsl::Writer::new(&mut out, &hlsl_options, &hlsl_pipeline)
        .write(&module, &info, None)
        .map_err(|e| format!("{name}: HLSL: {e}"))?;
    Ok(())
}

#[test]
fn every_variant_translates_to_spirv_msl_and_hlsl() {
    let mut failures = Vec::new();
    let mut count = 0;
    for shader in SHADERS {
        for variant in shader.variants {
            count += 1;
            let name = format!("{}{:?}", shader.name, variant.defines);
            if let Err(e) = translate(&name, variant.source, variant.defines.contains(&"F64")) {
                failures.push(e);
            }
        }
    }
    assert!(count >= 2 * SHADERS.len() / 2, "registry looks empty");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn subgroup_kernels_have_a_variant_without_subgroups() {
    // Code without comments: subgroup builtins and functions all start with "subgroup".
    let uses_subgroups = |source: &str| source.lines().any(|l| l.split("//").next().unwrap().contains("subgroup"));
    for shader in SHADERS {
        if shader.variants.iter().any(|v| uses_subgroups(v.source)) {
            assert!(shader.flags.contains(&"SUBGROUP"), "{}: uses subgroups without a SUBGROUP flag", shader.name);
            let plain = shader.variant(&[]);
            assert!(!uses_subgroups(plain.source), "{}: the variant without SUBGROUP uses subgroups", shader.name);
        }
    }
}

/// The interfaces host code builds by field name: a change on either side shows here, and
/// the host code that names a changed field stops compiling (see the `shaders` module docs).
#[test]
fn reflected_interfaces() {
    let mut table = String::new();
    for shader in SHADERS {
        let v = &shader.variants[0];
        let size = v.workgroup_size_override.map_or(format!("{:?}", v.workgroup_size), |o| o.to_string());
        let params: Vec<u32> = shader.variants.iter().map(|v| v.immediate_size).collect();
        writeln!(table, "{} flags={:?} workgroup={size} params bytes={params:?}", shader.name, shader.flags).unwrap();
        for b in shader.bindings {
            let access = if b.writable { "read_write" } else { "read" };
            writeln!(table, "  @binding({}) {} {access}", b.binding, b.name).unwrap();
        }
        for o in shader.overrides {
            writeln!(table, "  override {} = {}", o.name, o.default).unwrap();
        }
    }
    insta::assert_snapshot!(table);
}
