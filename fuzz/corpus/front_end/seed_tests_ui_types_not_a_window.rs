#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() {
        let v = vec![0.0f32; 4];
        all_reduce!(v);
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
