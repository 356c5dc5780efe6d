"""Every architecture on order, state, recall and the paper's addition at T0 = 100: the
experiment conf/experiment/order_battery.yaml, its page docs/order_battery.md.

    python src/train.py experiment=order_battery         # and the command after it in the conf
    python -m longterm.experiments.order_battery.page outputs/order_battery \
        --out docs/order_battery.md

page.py writes the page's table (its COMMANDS: the runs' commands).
"""
