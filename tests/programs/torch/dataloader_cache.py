"""A Dataset that caches every item it makes (leaky) or makes each anew (fixed), loaded by a
DataLoader with two workers: each worker is a copy of this process that the DataLoader forked, and a
cache grows in each. `tleak run --record-fork` records the first worker that allocates; its
Dataset marks an iteration per item. Leaky: that worker's cache grows by a 16 KiB tensor per
item, at the ITEM line; fixed: bounded."""
import sys

import torch
import tleak
from torch.utils.data import DataLoader, Dataset

torch.set_num_threads(1)
leaky = len(sys.argv) > 1 and sys.argv[1] == "leaky"


class Items(Dataset):
    def __init__(self, count):
        self.count = count
        self.cache = {}

    def __len__(self):
        return self.count

    def __getitem__(self, index):
        item = torch.full((4096,), float(index))  # ITEM
        if leaky:
            self.cache[index] = item
        tleak.mark_iteration()
        return item


total = 0
for batch in DataLoader(Items(120), batch_size=1, num_workers=2):
    total += int(batch[0][0]) >= 0
print("items", "leaky" if leaky else "fixed", total)
