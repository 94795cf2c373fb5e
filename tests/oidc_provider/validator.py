from oauth2_provider.oauth2_validators import OAuth2Validator


class GroupsValidator(OAuth2Validator):
    """The `groups` claim (the user's groups at the provider) in the ID token and user info; a
    deactivated user's refresh token is refused, as a company's provider does."""

    oidc_claim_scope = {**OAuth2Validator.oidc_claim_scope, "groups": "profile",
                        "preferred_username": "profile", "email": "email"}

    def get_additional_claims(self, request):
        user = request.user
        return {"preferred_username": user.username, "email": user.email, "given_name": user.first_name,
                "groups": sorted(user.groups.values_list("name", flat=True))}

    def validate_refresh_token(self, refresh_token, client, request, *args, **kwargs):
        return super().validate_refresh_token(refresh_token, client, request, *args, **kwargs) \
            and request.user.is_active
