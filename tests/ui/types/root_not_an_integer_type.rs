#[pld::program]
mod demo {
    #[pld::host]
    pub fn run(root: f32) {
        let data = window!(f32, [8]);
        reduce!(data, root = root);
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let _ = demo::load(&world).unwrap().run(1.0);
}
