//! `--occupancy`: how many workgroups of a given size and workgroup memory the GPU keeps
//! resident at once. A kernel whose workgroups each hold a counter up while they wait (a
//! bounded spin on a clock-free loop) records the most that were up together: with far more
//! workgroups than fit, that is the device's resident count. The driver, not the API, picks
//! how an SM splits its memory between L1 and workgroup memory, so this is measured, not
//! computed. A development tool.

use wgsparse::Context;

/// Workgroups per run: far more than any GPU holds.
const WORKGROUPS: u32 = 65535;

/// The probe's WGSL: `SHARED` u32 words of workgroup memory (touched, so they are kept).
fn source(wg_size: u32, shared_words: u32) -> String {
    format!(
        r#"
@group(0) @binding(0) var<storage, read_write> live: array<atomic<u32>, 4>;
var<workgroup> pad: array<u32, {words}>;

@compute @workgroup_size({wg_size})
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {{
    for (var i = lid; i < {words}u; i += {wg_size}u) {{
        pad[i] = wid.x + i;
    }}
    workgroupBarrier();
    if lid == 0u {{
        let now = atomicAdd(&live[0], 1u) + 1u;
        atomicMax(&live[1], now);
        // Stay up a while (bounded): long enough for the first wave to overlap.
        var v = pad[wid.x % {words}u];
        for (var i = 0u; i < 20000u; i++) {{
            v = v * 1664525u + 1013904223u;
        }}
        atomicSub(&live[0], 1u);
        if v == 0x9e3779b9u {{
            atomicAdd(&live[2], 1u);
        }}
    }}
}}
"#,
        words = shared_words.max(1),
    )
}

/// Prints the most workgroups resident together for each (workgroup size, shared bytes).
pub fn run(ctx: &Context, shapes: &[(u32, u32)]) -> Result<(), String> {
    let device = ctx.device();
    for &(wg_size, shared_bytes) in shapes {
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("occupancy"),
            source: wgpu::ShaderSource::Wgsl(source(wg_size, shared_bytes / 4).into()),
        });
        let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("occupancy"),
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: Default::default(),
            cache: None,
        });
        let counters = ctx.zeros::<u32>(4).map_err(|e| e.to_string())?;
        let group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &[wgpu::BindGroupEntry { binding: 0, resource: counters.buffer().as_entire_binding() }],
        });
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &group, &[]);
            pass.dispatch_workgroups(WORKGROUPS, 1, 1);
        }
        ctx.queue().submit([encoder.finish()]);
        let most = counters.read_blocking().map_err(|e| e.to_string())?[1];
        println!(
            "occupancy wg {wg_size:5} lanes, {shared_bytes:6} B workgroup memory: {most} workgroups resident at once"
        );
    }
    Ok(())
}
