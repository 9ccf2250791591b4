//! On CI and developer machines Mesa's lavapipe is installed (`.ci/run` installs
//! mesa-vulkan-drivers), so wgpu must find at least one adapter: this test fails rather than
//! skips when none is found, and prints what was found.

#[test]
fn an_adapter_is_found_and_described() {
    let found = tessera_wgpu::adapters().expect("probing must not fail");
    for adapter in &found {
        println!("adapter: {adapter}");
    }
    assert!(
        !found.is_empty(),
        "no wgpu adapter: {}",
        tessera_wgpu::status().detail
    );
    let status = tessera_wgpu::status();
    assert!(status.compiled_in);
    assert!(status.available, "{}", status.detail);
    assert_eq!(status.devices.len(), found.len());
}
