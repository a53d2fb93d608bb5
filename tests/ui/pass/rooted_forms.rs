//! Every accepted form of the rooted collectives: roots as literals, variables, consts and
//! expressions; ops; nranks; a group (variable and literal); a given signal; all_gather_v.

#[pld::program]
mod demo {
    pub const N: usize = 4;
    const ROOT: i64 = 3;

    #[pld::host]
    pub fn rooted(root: usize, pair: &pld::Group) -> (Vec<i32>, Vec<i32>, Vec<i32>) {
        let data = window!(i32, [4]);
        let local = window!(i32, [4]);
        let rows = window!(i32, [N, 4]);
        let pairs = window!(i32, [2, 4]);
        let mine = window!(i32, [4]);
        let s = signal!();
        for r in ranks() {
            stage_in!(data, r, [r as i32 + 1; 4]);
            stage_in!(local, r, [r as i32; 4]);
        }
        reduce!(data, root = 0);
        reduce!(data, root = root, op = max);
        reduce!(data, root = ROOT, op = prod, signal = s);
        reduce!(data, root = N - 1, nranks = 4);
        reduce!(data, root = 1, group = [1, 3]);
        reduce!(data, root = 0, op = avg, group = [0, 2]);
        gather!(local, rows, root = 0);
        gather!(local, rows, root = root, signal = s);
        gather!(local, pairs, root = 1, group = pair);
        scatter!(rows, mine, root = 0);
        scatter!(rows, mine, root = ROOT, nranks = N);
        scatter!(pairs, mine, root = 0, group = [0, 2]);
        let rows_of_one = window!(i32, [4, 1]);
        let ragged = window!(i32, [N * 4, 1]);
        let pair_rows = window!(i32, [8, 1]);
        let counts = window!(i32, [N]);
        let few = window!(i32, [2]);
        for r in ranks() {
            stage_in!(counts, r, [2; N]);
            stage_in!(few, r, [1; 2]);
        }
        all_gather_v!(rows_of_one, ragged, counts);
        all_gather_v!(rows_of_one, ragged, counts, nranks = 4, signal = s);
        all_gather_v!(local, pair_rows, few, group = pair);
        let (mut a, mut b, mut c) = (vec![0; 4], vec![0; 16], vec![0; 4]);
        stage_out!(data, 0, a);
        stage_out!(rows, 0, b);
        stage_out!(mine, 2, c);
        (a, b, c)
    }
}

fn main() {
    let world = pld::World::local(4).unwrap();
    let pair = world.host().unwrap().group(&[0, 1]).unwrap();
    let (reduced, gathered, scattered) = demo::load(&world).unwrap().rooted(2, &pair).unwrap();
    // sum to 0: [10; 4] on rank 0; the later reduces go elsewhere or over groups without rank 0.
    assert_eq!(reduced, vec![10; 4]);
    assert_eq!(gathered[..4], [0; 4]);
    assert_eq!(scattered.len(), 4);
}
