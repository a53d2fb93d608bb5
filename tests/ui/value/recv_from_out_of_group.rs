#[pld::program]
mod demo {
    #[pld::host]
    pub fn run() {
        let inbox = window!(u8, [8]);
        recv!(inbox, from = 2, to = 0, group = [1, 3]);
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let _ = demo::load(&world).unwrap().run();
}
