fn main() {
    let world = pld::World::local(2).unwrap();
    let host = world.host().unwrap();
    let data = host.window::<f32>("data", [4]).unwrap();
    all_reduce!(data);
}
