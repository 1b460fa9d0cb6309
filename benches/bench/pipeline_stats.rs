//! `--pipeline-stats`: what the driver's compiler made of our shaders — registers a lane,
//! spills, instruction counts, whatever the driver reports through
//! `VK_KHR_pipeline_executable_properties` (NVIDIA: "Register Count", …). A GPU's occupancy
//! follows from its registers a lane, and several of our misses were inferred to be
//! occupancy-bound without a way to read it (benches/NOTES.md, sessions 35 and 41).
//!
//! wgpu does not expose the extension, so this builds each pipeline itself through ash (the
//! Vulkan bindings wgpu uses) from the SPIR-V naga writes with the options our pipelines get
//! on Vulkan (`ShaderRuntimeChecks::unchecked()`, no zero-initialised workgroup memory), and
//! asks the driver for its statistics. A development tool: nothing runs on the GPU.

use std::collections::BTreeMap;
use std::ffi::{CStr, CString};

use ash::vk;
use naga::back::spv;
use naga::valid::{Capabilities, ValidationFlags, Validator};
use wgsparse::shaders::{ShaderInfo, ShaderVariant, SHADERS};

/// One request: a shader by file stem, the flags of one variant (all variants when none),
/// and override values (`lu_team+SUBGROUP@WG_SIZE=64@TEAM=32`).
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    pub shader: String,
    pub flags: Option<Vec<String>>,
    pub overrides: Vec<(String, f64)>,
}

impl Spec {
    /// Parses `name[+FLAG…][@NAME=VALUE…]`.
    pub fn parse(text: &str) -> Result<Spec, String> {
        let mut parts = text.split('@');
        let head = parts.next().unwrap_or_default();
        let mut names = head.split('+');
        let shader = names.next().unwrap_or_default().to_string();
        if shader.is_empty() {
            return Err(format!("--pipeline-stats: no shader name in {text:?}"));
        }
        let flags: Vec<String> = names.map(str::to_string).collect();
        let mut overrides = Vec::new();
        for part in parts {
            let parsed = part.split_once('=').and_then(|(k, v)| Some((k.to_string(), v.parse::<f64>().ok()?)));
            overrides.push(parsed.ok_or(format!("--pipeline-stats: {part:?} is not NAME=NUMBER"))?);
        }
        Ok(Spec { shader, flags: (!flags.is_empty()).then_some(flags), overrides })
    }
}

/// Prints the statistics of every variant the specs name.
pub fn run(specs: &[Spec]) -> Result<(), String> {
    let driver = Driver::new()?;
    println!("device    {}", driver.name);
    for spec in specs {
        let shader = SHADERS
            .iter()
            .find(|s| s.name == spec.shader)
            .ok_or_else(|| format!("--pipeline-stats: no shader named {:?}", spec.shader))?;
        let variants: Vec<&ShaderVariant> = match &spec.flags {
            Some(flags) => {
                if let Some(f) = flags.iter().find(|f| !shader.flags.contains(&f.as_str())) {
                    return Err(format!("{}: no flag {f:?} (it has {:?})", shader.name, shader.flags));
                }
                let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
                vec![shader.variant(&flags)]
            }
            None => shader.variants.iter().collect(),
        };
        for variant in variants {
            let label = format!("{}[{}]", shader.name, variant.defines.join(","));
            let overrides: Vec<String> = spec.overrides.iter().map(|(k, v)| format!("{k}={v}")).collect();
            match driver.statistics(shader, variant, &spec.overrides) {
                Ok(executables) => {
                    for (executable, stats) in executables {
                        let stats: Vec<String> = stats.iter().map(|(k, v)| format!("{k}={v}")).collect();
                        println!("{label} {} ({executable}): {}", overrides.join(" "), stats.join(", "));
                    }
                }
                Err(e) => println!("{label} {}: {e}", overrides.join(" ")),
            }
        }
    }
    Ok(())
}

/// A Vulkan call's error as text, named.
fn vk_err(what: &'static str) -> impl Fn(vk::Result) -> String {
    move |e| format!("{what}: {e}")
}

/// A Vulkan device with `pipelineExecutableInfo` enabled.
struct Driver {
    _entry: ash::Entry,
    instance: ash::Instance,
    device: ash::Device,
    executables: ash::khr::pipeline_executable_properties::Device,
    name: String,
    lang_version: (u8, u8),
}

/// An executable's name and its statistics (name → value, as text).
type Executable = (String, BTreeMap<String, String>);

impl Driver {
    fn new() -> Result<Driver, String> {
        // SAFETY: loading the system's Vulkan loader; the calls below follow the spec's
        // valid usage (handles created here, destroyed in Drop).
        unsafe {
            let entry = ash::Entry::load().map_err(|e| format!("no Vulkan loader: {e}"))?;
            let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
            let instance = entry
                .create_instance(&vk::InstanceCreateInfo::default().application_info(&app), None)
                .map_err(vk_err("vkCreateInstance"))?;
            let wanted = std::env::var("WGSPARSE_ADAPTER").ok().map(|s| s.to_lowercase());
            let mut best = None;
            for physical in instance.enumerate_physical_devices().map_err(vk_err("vkEnumeratePhysicalDevices"))? {
                let props = instance.get_physical_device_properties(physical);
                let name = props.device_name_as_c_str().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                let named = wanted.as_ref().is_none_or(|w| name.to_lowercase().contains(w));
                let rank = match props.device_type {
                    vk::PhysicalDeviceType::DISCRETE_GPU => 3,
                    vk::PhysicalDeviceType::INTEGRATED_GPU => 2,
                    _ => 1,
                };
                if named && best.as_ref().is_none_or(|(r, _, _, _)| rank > *r) {
                    best = Some((rank, physical, name, props.api_version));
                }
            }
            let (_, physical, name, api_version) =
                best.ok_or("no Vulkan device (or none named by WGSPARSE_ADAPTER)")?;
            let extension = ash::khr::pipeline_executable_properties::NAME;
            let has_extension = instance
                .enumerate_device_extension_properties(physical)
                .map_err(vk_err("vkEnumerateDeviceExtensionProperties"))?
                .iter()
                .any(|e| e.extension_name_as_c_str() == Ok(extension));
            if !has_extension {
                return Err(format!("{name}: no {}", extension.to_string_lossy()));
            }
            let supported = instance.get_physical_device_features(physical);
            let features = vk::PhysicalDeviceFeatures::default()
                .shader_float64(supported.shader_float64 == vk::TRUE)
                .shader_int64(supported.shader_int64 == vk::TRUE);
            let family = instance
                .get_physical_device_queue_family_properties(physical)
                .iter()
                .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
                .ok_or("no compute queue")? as u32;
            let priorities = [1.0];
            let queues =
                [vk::DeviceQueueCreateInfo::default().queue_family_index(family).queue_priorities(&priorities)];
            let extensions = [extension.as_ptr()];
            let mut executable_info =
                vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default().pipeline_executable_info(true);
            let create = vk::DeviceCreateInfo::default()
                .queue_create_infos(&queues)
                .enabled_extension_names(&extensions)
                .enabled_features(&features)
                .push_next(&mut executable_info);
            let device = instance.create_device(physical, &create, None).map_err(vk_err("vkCreateDevice"))?;
            let executables = ash::khr::pipeline_executable_properties::Device::new(&instance, &device);
            // The SPIR-V version wgpu writes for the device's Vulkan version.
            let lang_version = match vk::api_version_minor(api_version.min(vk::API_VERSION_1_3)) {
                0 => (1, 0),
                1 => (1, 3),
                2 => (1, 5),
                _ => (1, 6),
            };
            Ok(Driver { _entry: entry, instance, device, executables, name, lang_version })
        }
    }

    /// The SPIR-V of a variant with these overrides, as wgpu writes it for our pipelines.
    fn spirv(&self, variant: &ShaderVariant, overrides: &[(String, f64)]) -> Result<Vec<u32>, String> {
        let source = variant.source;
        let module = naga::front::wgsl::parse_str(source).map_err(|e| e.emit_to_string(source))?;
        let info = Validator::new(ValidationFlags::all(), Capabilities::all())
            .validate(&module)
            .map_err(|e| e.emit_to_string(source))?;
        let constants: naga::back::PipelineConstants = overrides.iter().cloned().collect();
        let entry = (naga::ShaderStage::Compute, variant.entry_point);
        let (module, info) = naga::back::pipeline_constants::process_overrides(&module, &info, Some(entry), &constants)
            .map_err(|e| format!("overrides: {e}"))?;
        let options = spv::Options {
            lang_version: self.lang_version,
            bounds_check_policies: naga::proc::BoundsCheckPolicies::default(),
            zero_initialize_workgroup_memory: spv::ZeroInitializeWorkgroupMemoryMode::None,
            force_loop_bounding: false,
            emit_int_div_checks: false,
            ..Default::default()
        };
        let pipeline = spv::PipelineOptions {
            shader_stage: naga::ShaderStage::Compute,
            entry_point: variant.entry_point.to_string(),
        };
        spv::write_vec(&module, &info, &options, Some(&pipeline)).map_err(|e| format!("SPIR-V: {e}"))
    }

    /// Builds the variant's pipeline with statistics captured and reads them.
    fn statistics(
        &self,
        shader: &ShaderInfo,
        variant: &ShaderVariant,
        overrides: &[(String, f64)],
    ) -> Result<Vec<Executable>, String> {
        if let Some((name, _)) = overrides.iter().find(|(name, _)| !shader.overrides.iter().any(|o| o.name == *name)) {
            let known: Vec<&str> = shader.overrides.iter().map(|o| o.name).collect();
            return Err(format!("no override {name:?} (it has {known:?})"));
        }
        let code = self.spirv(variant, overrides)?;
        let entry_point = CString::new(variant.entry_point).map_err(|e| e.to_string())?;
        // SAFETY: every handle is created from self.device here and destroyed before return.
        unsafe {
            let module = self
                .device
                .create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&code), None)
                .map_err(vk_err("vkCreateShaderModule"))?;
            let bindings: Vec<vk::DescriptorSetLayoutBinding> = shader
                .bindings
                .iter()
                .map(|b| {
                    vk::DescriptorSetLayoutBinding::default()
                        .binding(b.binding)
                        .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                        .descriptor_count(1)
                        .stage_flags(vk::ShaderStageFlags::COMPUTE)
                })
                .collect();
            let set_layout = self
                .device
                .create_descriptor_set_layout(&vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings), None)
                .map_err(vk_err("vkCreateDescriptorSetLayout"))?;
            let set_layouts = [set_layout];
            let ranges = [vk::PushConstantRange::default()
                .stage_flags(vk::ShaderStageFlags::COMPUTE)
                .size(variant.immediate_size.max(4))];
            let mut layout_info = vk::PipelineLayoutCreateInfo::default().set_layouts(&set_layouts);
            if variant.immediate_size > 0 {
                layout_info = layout_info.push_constant_ranges(&ranges);
            }
            let layout = self.device.create_pipeline_layout(&layout_info, None);
            let result = layout.map_err(vk_err("vkCreatePipelineLayout")).and_then(|layout| {
                let stage = vk::PipelineShaderStageCreateInfo::default()
                    .stage(vk::ShaderStageFlags::COMPUTE)
                    .module(module)
                    .name(&entry_point);
                let ir_dir = std::env::var_os("WGSPARSE_IR_DIR").map(std::path::PathBuf::from);
                let mut flags = vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR;
                if ir_dir.is_some() {
                    flags |= vk::PipelineCreateFlags::CAPTURE_INTERNAL_REPRESENTATIONS_KHR;
                }
                let create = vk::ComputePipelineCreateInfo::default().flags(flags).stage(stage).layout(layout);
                let pipelines = self
                    .device
                    .create_compute_pipelines(vk::PipelineCache::null(), &[create], None)
                    .map_err(|(_, e)| format!("vkCreateComputePipelines: {e}"));
                let stats = pipelines.and_then(|pipelines| {
                    let stats = self.read(pipelines[0]);
                    self.device.destroy_pipeline(pipelines[0], None);
                    stats
                });
                self.device.destroy_pipeline_layout(layout, None);
                stats
            });
            self.device.destroy_descriptor_set_layout(set_layout, None);
            self.device.destroy_shader_module(module, None);
            result
        }
    }

    /// The statistics of each executable of a pipeline.
    unsafe fn read(&self, pipeline: vk::Pipeline) -> Result<Vec<Executable>, String> {
        let text = |c: Result<&CStr, _>| c.map(|c: &CStr| c.to_string_lossy().into_owned()).unwrap_or_default();
        // SAFETY: the pipeline was created with CAPTURE_STATISTICS on a device with the feature.
        unsafe {
            let properties = self
                .executables
                .get_pipeline_executable_properties(&vk::PipelineInfoKHR::default().pipeline(pipeline))
                .map_err(vk_err("vkGetPipelineExecutablePropertiesKHR"))?;
            let mut out = Vec::new();
            for (index, p) in properties.iter().enumerate() {
                let info = vk::PipelineExecutableInfoKHR::default().pipeline(pipeline).executable_index(index as u32);
                let stats = self
                    .executables
                    .get_pipeline_executable_statistics(&info)
                    .map_err(vk_err("vkGetPipelineExecutableStatisticsKHR"))?;
                let values = stats
                    .iter()
                    .map(|s| {
                        let value = match s.format {
                            vk::PipelineExecutableStatisticFormatKHR::BOOL32 => (s.value.b32 != 0).to_string(),
                            vk::PipelineExecutableStatisticFormatKHR::INT64 => s.value.i64.to_string(),
                            vk::PipelineExecutableStatisticFormatKHR::UINT64 => s.value.u64.to_string(),
                            _ => format!("{:.3}", s.value.f64),
                        };
                        (text(s.name_as_c_str()), value)
                    })
                    .collect();
                out.push((text(p.name_as_c_str()), values));
            }
            Ok(out)
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // SAFETY: nothing created from the device outlives this.
        unsafe {
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}
