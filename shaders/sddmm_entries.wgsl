// SDDMM by entries where k is a multiple of 4: B1 and B2 read as vec4 (see
// shared/sddmm_entries_body.wgsl).
#import real
#import unit_vec4
#import sddmm_entries_body
