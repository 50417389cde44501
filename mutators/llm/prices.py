"""What an LLM call costs: the price table of the config (conf/llm/_prices.yaml), or the user's price."""
from __future__ import annotations

import re

from evo.config import LLMConfig, LLMPrice
from evo.core.errors import ConfigError

_DATED = re.compile(r"-\d{8}$")  # claude-sonnet-4-5-20250929 is priced as claude-sonnet-4-5
_OWN = ("price_in_per_mtok", "price_out_per_mtok", "price_cache_write_per_mtok", "price_cache_read_per_mtok")


def price_of(cfg: LLMConfig) -> LLMPrice | None:
    """The user's price when all four llm.price_* are given, else the table's entry for the model."""
    own = [getattr(cfg, k) for k in _OWN]
    if all(v is not None for v in own):
        listed = _listed(cfg)
        return LLMPrice(in_per_mtok=own[0], out_per_mtok=own[1], cache_write_per_mtok=own[2],
                        cache_read_per_mtok=own[3], min_cache_tokens=listed.min_cache_tokens if listed else 1024)
    if any(v is not None for v in own):
        missing = ", ".join(f"llm.{k}" for k, v in zip(_OWN, own) if v is None)
        raise ConfigError(f"a price of your own needs all four llm.price_*_per_mtok settings: {missing} missing")
    return _listed(cfg)


def _listed(cfg: LLMConfig) -> LLMPrice | None:
    return listed_price(cfg, cfg.model)


def listed_price(cfg: LLMConfig, model: str) -> LLMPrice | None:
    """The table's price for `model` (a dated name priced as its undated one), or None."""
    prices = cfg.prices or {}
    return prices.get(model) or prices.get(_DATED.sub("", model))


def same_model(a: str, b: str) -> bool:
    """Whether two model names are one model (a dated name and its undated one are)."""
    return _DATED.sub("", a) == _DATED.sub("", b)


def require_price(cfg: LLMConfig) -> LLMPrice:
    """The price, or a refusal: a budget cannot be kept on a model whose price is unknown."""
    price = price_of(cfg)
    if price is None:
        known = ", ".join(sorted(cfg.prices or {})) or "none"
        raise ConfigError(
            f"llm.model={cfg.model} has no price in the table (conf/llm/_prices.yaml, {cfg.prices_date or 'undated'}; "
            f"known: {known}), so llm.budget_usd cannot be kept: give the model's list price as llm.price_in_per_mtok=... "
            f"llm.price_out_per_mtok=... llm.price_cache_write_per_mtok=... llm.price_cache_read_per_mtok=... "
            f"(USD per million tokens)")
    return price


def cost_usd(price: LLMPrice, *, input_tokens: int, output_tokens: int, cache_write_tokens: int,
             cache_read_tokens: int) -> float:
    return (input_tokens * price.in_per_mtok + output_tokens * price.out_per_mtok
            + cache_write_tokens * price.cache_write_per_mtok + cache_read_tokens * price.cache_read_per_mtok) / 1e6
