// SDDMM by entries for any k: B1 and B2 read one element at a time (see
// shared/sddmm_entries_body.wgsl).
#import real
#import unit_scalar
#import sddmm_entries_body
