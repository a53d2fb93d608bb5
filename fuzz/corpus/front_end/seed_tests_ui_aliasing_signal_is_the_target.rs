#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() {
        let data = window!(i32, [4]);
        all_reduce!(data, signal = data);
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
